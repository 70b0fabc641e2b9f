#include "calib/sample_axes.h"

#include <algorithm>
#include <cmath>
#include <functional>
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

// The one axis whose size is k in `one` and 2k in `two`, every other size equal, with k in
// `slices`; -1 if none.
int DoubledAxis(const std::vector<int64_t>& one, const std::vector<int64_t>& two, int64_t* slices) {
  if (one.size() != two.size()) return -1;
  int axis = -1;
  for (size_t d = 0; d < one.size(); ++d) {
    if (one[d] == two[d]) continue;
    if (one[d] < 1 || two[d] != 2 * one[d] || axis >= 0) return -1;
    axis = static_cast<int>(d);
    *slices = one[d];
  }
  return axis;
}

// Whether the slices of `two` (its `axis` 2 * slices long) that hold the first of two samples
// (the first `slices` when `sample_major`, else the even ones) equal `one` (that axis `slices`
// long) to 1e-4 of one's largest magnitude; false on a NaN or Inf.
bool FirstSampleMatches(absl::Span<const float> one, const ir::Tensor& two, int axis, int64_t slices,
                        bool sample_major) {
  const std::vector<int64_t>& dims = two.dims();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const absl::Span<const float> got = two.values<float>();
  if (static_cast<int64_t>(one.size()) != outer * slices * inner || got.size() != 2 * one.size()) return false;
  float largest = 0.f;
  for (const float v : one) {
    if (!std::isfinite(v)) return false;
    largest = std::max(largest, std::fabs(v));
  }
  const float tolerance = 1e-4f * largest;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < slices; ++j) {
      const float* want = one.data() + (o * slices + j) * inner;
      const float* have = got.data() + (o * 2 * slices + (sample_major ? j : 2 * j)) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if (!(std::fabs(want[i] - have[i]) <= tolerance)) return false;
      }
    }
  }
  return true;
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
    for (const ir::Value* v : values) axes.axis[v] = SampleAxis{};
    return axes;
  }
  if (data.fixed_batch() > 0 || data.size() < 2) return axes;
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Executor> exec, runtime::Executor::Create(graph, exec_options));
  const absl::flat_hash_set<const ir::Value*> wanted(values.begin(), values.end());
  // Runs on the first `count` samples; `observe` sees every wanted value (graph inputs from the
  // batch). false when the run fails.
  const auto probe = [&](int64_t count,
                         const std::function<void(const ir::Value&, const ir::Tensor&)>& observe) -> bool {
    absl::StatusOr<std::vector<ir::NamedTensor>> inputs = data.ReadBatch(0, count);
    if (!inputs.ok()) return false;
    for (const ir::NamedTensor& in : *inputs) {
      const ir::Value* v = graph.FindValue(in.name);
      if (v != nullptr && wanted.contains(v)) observe(*v, in.tensor);
    }
    runtime::RunOptions options;
    options.observer = [&](const ir::Value& v, const ir::Tensor& t) {
      if (wanted.contains(&v)) observe(v, t);
    };
    return exec->Run(*inputs, options).ok();
  };
  // Two samples, then one: every value's dims, and a copy of each one-sample float value that
  // may be a merged batch (an axis of size k > 1 that two samples double).
  absl::flat_hash_map<const ir::Value*, std::vector<int64_t>> two_dims;
  if (!probe(2, [&](const ir::Value& v, const ir::Tensor& t) { two_dims[&v] = t.dims(); })) return axes;
  struct Merged {
    SampleAxis where;
    std::vector<float> one;
  };
  absl::flat_hash_map<const ir::Value*, Merged> merged;
  SampleAxes found;
  found.known = true;
  if (!probe(1, [&](const ir::Value& v, const ir::Tensor& t) {
        const auto two = two_dims.find(&v);
        if (two == two_dims.end()) return;
        SampleAxis where;
        where.axis = DoubledAxis(t.dims(), two->second, &where.slices);
        if (where.axis < 0) return;
        if (where.slices == 1) {
          found.axis[&v] = where;
        } else if (t.dtype() == ir::DataType::kFloat32) {
          const absl::Span<const float> one = t.values<float>();
          merged[&v] = Merged{where, std::vector<float>(one.begin(), one.end())};
        }
      })) {
    return axes;
  }
  // Two samples again: which slices of a merged value hold the first sample.
  if (!merged.empty() && !probe(2, [&](const ir::Value& v, const ir::Tensor& t) {
        const auto it = merged.find(&v);
        if (it == merged.end() || t.dtype() != ir::DataType::kFloat32) return;
        SampleAxis where = it->second.where;
        for (const bool sample_major : {true, false}) {
          if (FirstSampleMatches(it->second.one, t, where.axis, where.slices, sample_major)) {
            where.sample_major = sample_major;
            found.axis[&v] = where;
            return;
          }
        }
      })) {
    return axes;
  }
  return found;
}

std::optional<SampleView> SampleViewOf(const SampleAxes& axes, const ir::Value* value, const ir::Tensor& tensor,
                                       int64_t count) {
  const std::vector<int64_t>& dims = tensor.dims();
  if (!axes.known) {
    if (dims.empty() || dims[0] != count) return std::nullopt;
    return SampleView{dims, 0};
  }
  const auto it = axes.axis.find(value);
  if (it == axes.axis.end()) return std::nullopt;
  const SampleAxis& where = it->second;
  if (where.axis >= static_cast<int>(dims.size()) || dims[where.axis] != count * where.slices) return std::nullopt;
  if (where.slices == 1) return SampleView{dims, where.axis};
  SampleView view;
  view.dims.assign(dims.begin(), dims.begin() + where.axis);
  view.dims.push_back(where.sample_major ? count : where.slices);
  view.dims.push_back(where.sample_major ? where.slices : count);
  view.dims.insert(view.dims.end(), dims.begin() + where.axis + 1, dims.end());
  view.axis = where.sample_major ? where.axis : where.axis + 1;
  return view;
}

void MoveAxisFirst(absl::Span<const float> in, absl::Span<const int64_t> dims, int axis, std::vector<float>* out) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t n = dims[axis];
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
