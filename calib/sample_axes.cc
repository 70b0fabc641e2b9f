#include "calib/sample_axes.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "base/status_macros.h"

namespace qfuse::calib {
namespace {

// Every value of `values` has a known rank, one of `symbols` first and none of them elsewhere.
bool BatchFirstByShape(const std::vector<const ir::Value*>& values, const absl::flat_hash_set<std::string>& symbols) {
  for (const ir::Value* v : values) {
    const ir::Shape& shape = v->type().shape;
    if (!shape.rank_known || shape.dims.empty() || !symbols.contains(shape.dims[0].symbol)) return false;
    for (size_t d = 1; d < shape.dims.size(); ++d) {
      if (symbols.contains(shape.dims[d].symbol)) return false;
    }
  }
  return true;
}

// The one axis whose size is 1 in `one` and 2 in `two`, every other size equal; -1 if none.
int AxisFromOneToTwo(const std::vector<int64_t>& one, const std::vector<int64_t>& two) {
  if (one.size() != two.size()) return -1;
  int axis = -1;
  for (size_t d = 0; d < one.size(); ++d) {
    if (one[d] == two[d]) continue;
    if (one[d] != 1 || two[d] != 2 || axis >= 0) return -1;
    axis = static_cast<int>(d);
  }
  return axis;
}

}  // namespace

absl::StatusOr<SampleAxes> FindSampleAxes(const ir::Graph& graph, const std::vector<const ir::Value*>& values,
                                          const runtime::ExecutorOptions& exec_options, data::Dataset& data) {
  SampleAxes axes;
  absl::flat_hash_set<std::string> symbols;  // the graph inputs' batch dims
  for (const ir::Value* in : graph.inputs()) {
    const ir::Shape& shape = in->type().shape;
    if (shape.rank_known && !shape.dims.empty() && !shape.dims[0].symbol.empty()) symbols.insert(shape.dims[0].symbol);
  }
  if (!symbols.empty() && BatchFirstByShape(values, symbols)) {
    axes.known = true;
    for (const ir::Value* v : values) axes.axis[v] = 0;
    return axes;
  }
  if (data.fixed_batch() > 0 || data.size() < 2) return axes;
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Executor> exec, runtime::Executor::Create(graph, exec_options));
  const absl::flat_hash_set<const ir::Value*> wanted(values.begin(), values.end());
  std::vector<absl::flat_hash_map<const ir::Value*, std::vector<int64_t>>> dims(2);
  for (int run = 0; run < 2; ++run) {
    QFUSE_ASSIGN_OR_RETURN(std::vector<ir::NamedTensor> inputs, data.ReadBatch(0, run + 1));
    for (const ir::NamedTensor& in : inputs) {
      const ir::Value* v = graph.FindValue(in.name);
      if (v != nullptr && wanted.contains(v)) dims[run][v] = in.tensor.dims();
    }
    runtime::RunOptions options;
    options.observer = [&](const ir::Value& v, const ir::Tensor& t) {
      if (wanted.contains(&v)) dims[run][&v] = t.dims();
    };
    if (!exec->Run(inputs, options).ok()) return axes;  // not found
  }
  axes.known = true;
  for (const auto& [value, one] : dims[0]) {
    const auto two = dims[1].find(value);
    if (two == dims[1].end()) continue;
    const int axis = AxisFromOneToTwo(one, two->second);
    if (axis >= 0) axes.axis[value] = axis;
  }
  return axes;
}

int SampleAxisOf(const SampleAxes& axes, const ir::Value* value, const ir::Tensor& tensor, int64_t count) {
  const std::vector<int64_t>& dims = tensor.dims();
  if (!axes.known) return !dims.empty() && dims[0] == count ? 0 : -1;
  const auto it = axes.axis.find(value);
  if (it == axes.axis.end() || it->second >= static_cast<int>(dims.size()) || dims[it->second] != count) return -1;
  return it->second;
}

void MoveAxisFirst(const ir::Tensor& tensor, int axis, std::vector<float>* out) {
  const std::vector<int64_t>& dims = tensor.dims();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t n = dims[axis];
  const absl::Span<const float> in = tensor.values<float>();
  out->resize(in.size());
  // out[s][o][i] = in[o][s][i]
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t o = 0; o < outer; ++o) {
      const float* src = in.data() + (o * n + s) * inner;
      std::copy(src, src + inner, out->data() + (s * outer + o) * inner);
    }
  }
}

}  // namespace qfuse::calib
