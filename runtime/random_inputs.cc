#include "runtime/random_inputs.h"

#include <random>

#include "absl/strings/str_cat.h"

namespace qfuse::runtime {

absl::StatusOr<std::vector<NamedTensor>> RandomInputs(const ir::Graph& graph, const RandomInputOptions& options) {
  std::mt19937 rng(options.seed);
  std::uniform_real_distribution<float> uniform(options.low, options.high);
  std::vector<NamedTensor> inputs;
  for (const ir::Value* in : graph.inputs()) {
    if (!in->type().shape.rank_known) {
      return absl::InvalidArgumentError(absl::StrCat("input '", in->name(), "' has unknown rank; give input data"));
    }
    if (in->type().dtype != ir::DataType::kFloat32) {
      return absl::InvalidArgumentError(absl::StrCat("input '", in->name(), "' is ", ir::DataTypeName(in->type().dtype),
                                                     "; random data is FLOAT only, give input data"));
    }
    std::vector<int64_t> dims;
    for (const ir::Dim& d : in->type().shape.dims) {
      auto named = options.symbol_sizes.find(d.symbol);
      dims.push_back(d.is_known() ? d.value : named != options.symbol_sizes.end() ? named->second : options.batch);
    }
    absl::StatusOr<ir::Tensor> created =
        ir::Tensor::Create(ir::DataType::kFloat32, dims, ("input '" + in->name() + "'").c_str());
    if (!created.ok()) return created.status();
    ir::Tensor t = *std::move(created);
    for (float& v : t.mutable_values<float>()) v = uniform(rng);
    inputs.push_back({in->name(), std::move(t)});
  }
  return inputs;
}

}  // namespace qfuse::runtime
