#include "fusion/equivalence.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "runtime/random_inputs.h"

namespace qfuse::fusion {

std::string EquivalenceReport::ToString() const {
  return absl::StrFormat("max abs diff %.3g, max rel diff %.3g (worst output '%s', %d elements)", max_abs_diff,
                         max_rel_diff, worst_output, elements_compared);
}

absl::StatusOr<EquivalenceReport> CompareGraphsNumerically(const ir::Graph& before, const ir::Graph& after,
                                                           const EquivalenceOptions& options) {
  runtime::ExecutorOptions exec_options;
  exec_options.num_threads = options.num_threads;
  exec_options.fuse_float_chains = false;  // the graphs as written, op by op
  QFUSE_ASSIGN_OR_RETURN(auto exec_before, runtime::Executor::Create(before, exec_options));
  QFUSE_ASSIGN_OR_RETURN(auto exec_after, runtime::Executor::Create(after, exec_options));
  std::vector<std::vector<ir::NamedTensor>> sets = options.input_sets;
  for (int i = 0; sets.empty() && i < options.random_sets; ++i) {
    runtime::RandomInputOptions random;
    random.batch = options.batch;
    random.seed = options.seed + i;
    random.low = -1.f;
    QFUSE_ASSIGN_OR_RETURN(auto inputs, runtime::RandomInputs(before, random));
    sets.push_back(std::move(inputs));
  }
  EquivalenceReport report;
  for (const auto& inputs : sets) {
    QFUSE_ASSIGN_OR_RETURN(auto out_before, exec_before->Run(inputs));
    QFUSE_ASSIGN_OR_RETURN(auto out_after, exec_after->Run(inputs));
    if (out_before.size() != out_after.size()) {
      return absl::FailedPreconditionError(absl::StrFormat("output count %d vs %d", out_before.size(), out_after.size()));
    }
    for (size_t k = 0; k < out_before.size(); ++k) {
      const ir::Tensor& a = out_before[k].tensor;
      const ir::Tensor& b = out_after[k].tensor;
      if (out_before[k].name != out_after[k].name || a.dtype() != b.dtype() || a.dims() != b.dims()) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "output %d: '%s' %s%s before vs '%s' %s%s after", k, out_before[k].name, ir::DataTypeName(a.dtype()),
            ir::DimsToString(a.dims()), out_after[k].name, ir::DataTypeName(b.dtype()), ir::DimsToString(b.dims())));
      }
      if (a.dtype() != ir::DataType::kFloat32) {
        if (!a.BitwiseEqual(b)) {
          report.max_abs_diff = INFINITY;
          report.worst_output = out_before[k].name;
        }
        continue;
      }
      const float* pa = a.data<float>();
      const float* pb = b.data<float>();
      for (int64_t i = 0; i < a.num_elements(); ++i) {
        const double diff = std::fabs(static_cast<double>(pa[i]) - pb[i]);
        if (diff > report.max_abs_diff) {
          report.max_abs_diff = diff;
          report.worst_output = out_before[k].name;
        }
        if (std::fabs(pa[i]) > 1e-6) report.max_rel_diff = std::max(report.max_rel_diff, diff / std::fabs(pa[i]));
      }
      report.elements_compared += a.num_elements();
    }
  }
  return report;
}

}  // namespace qfuse::fusion
