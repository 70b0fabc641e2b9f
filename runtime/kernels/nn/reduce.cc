// ReduceSum / ReduceMean / ReduceMax and ArgMax.
//
// Reductions accept the axes as an input (ReduceSum, opset 13) or as an attribute
// (ReduceMean, ReduceMax at opset 13); no axes reduce everything unless
// noop_with_empty_axes = 1, which passes the input through. A reduction over an empty
// range gives 0 (sum), NaN (floating mean; 0 for integers) or the type's lowest value
// (max). Float32 sums over trailing axes add in onnxruntime's order, in float32
// (nn_common.h OrtFloatSum), and a mean divides in float32, as onnxruntime does; double sums
// accumulate in double; other patterns add in the element type; integer sums wrap in int64
// then narrow.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/kernels/nn/nn_common.h"

namespace qfuse::runtime::kernels {
namespace {

using nn_internal::MinChunk;

enum class ReduceOp { kSum, kMean, kMax };

struct ReduceParams {
  ReduceOp op = ReduceOp::kSum;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  std::vector<int64_t> attr_axes;  // used when no axes input is given
};

// A run of adjacent input dims that are all reduced or all kept (unit dims dropped).
struct DimGroup {
  int64_t size;
  bool reduced;
};

template <typename T>
struct ReduceTraits {
  static constexpr bool kFloating = std::is_floating_point_v<T>;
  using Acc = std::conditional_t<kFloating, double, int64_t>;
};

template <typename T>
T Finish(ReduceOp op, typename ReduceTraits<T>::Acc acc, int64_t count) {
  if (op == ReduceOp::kMean) {
    if constexpr (ReduceTraits<T>::kFloating) {
      return static_cast<T>(acc / static_cast<double>(count));
    } else {
      return count > 0 ? static_cast<T>(acc / count) : T(0);
    }
  }
  return static_cast<T>(acc);
}

// [outer, reduced, inner] with one reduced run.
template <typename T>
void ReduceBlocked(const KernelContext& ctx, ReduceOp op, const T* x, T* y, int64_t outer, int64_t reduced,
                   int64_t inner) {
  using Acc = typename ReduceTraits<T>::Acc;
  ctx.pool->ParallelFor(outer, MinChunk(reduced * inner), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* xo = x + o * reduced * inner;
      T* yo = y + o * inner;
      if (op == ReduceOp::kMax) {
        std::fill(yo, yo + inner, std::numeric_limits<T>::lowest());
        for (int64_t r = 0; r < reduced; ++r) {
          const T* xr = xo + r * inner;
          for (int64_t i = 0; i < inner; ++i) yo[i] = xr[i] > yo[i] ? xr[i] : yo[i];
        }
      } else if (inner == 1) {
        if constexpr (std::is_same_v<T, float>) {
          // onnxruntime's float sum and its division, so that its int8 files agree bit for bit
          // where a reduction sits between DequantizeLinear and QuantizeLinear.
          const float sum = nn_internal::OrtFloatSum(xo, reduced, o * reduced);
          yo[0] = op == ReduceOp::kMean
                      ? (reduced > 0 ? sum / static_cast<float>(reduced) : std::numeric_limits<float>::quiet_NaN())
                      : sum;
        } else {
          Acc acc = 0;
          for (int64_t r = 0; r < reduced; ++r) acc += xo[r];
          yo[0] = Finish<T>(op, acc, reduced);
        }
      } else {
        std::fill(yo, yo + inner, T(0));
        for (int64_t r = 0; r < reduced; ++r) {
          const T* xr = xo + r * inner;
          for (int64_t i = 0; i < inner; ++i) yo[i] += xr[i];
        }
        if (op == ReduceOp::kMean) {
          for (int64_t i = 0; i < inner; ++i) yo[i] = Finish<T>(op, yo[i], reduced);
        }
      }
    }
  });
}

// Any pattern of reduced dims: walks the input once, adding into the output.
template <typename T>
void ReduceGeneral(ReduceOp op, const T* x, T* y, const std::vector<DimGroup>& groups, int64_t in_count,
                   int64_t out_count) {
  const size_t rank = groups.size();
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
    if (groups[d].reduced) continue;
    out_strides[d] = stride;
    stride *= groups[d].size;
  }
  std::fill(y, y + out_count, op == ReduceOp::kMax ? std::numeric_limits<T>::lowest() : T(0));
  std::vector<int64_t> index(rank, 0);
  int64_t out = 0;
  for (int64_t i = 0; i < in_count; ++i) {
    if (op == ReduceOp::kMax) {
      y[out] = x[i] > y[out] ? x[i] : y[out];
    } else {
      y[out] += x[i];
    }
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      out += out_strides[d];
      if (++index[d] < groups[d].size) break;
      out -= out_strides[d] * groups[d].size;
      index[d] = 0;
    }
  }
  if (op == ReduceOp::kMean && out_count > 0) {
    const int64_t count = in_count / out_count;
    for (int64_t o = 0; o < out_count; ++o) y[o] = Finish<T>(op, y[o], count);
  }
}

class ReduceKernel : public Kernel {
 public:
  explicit ReduceKernel(ReduceParams p) : p_(std::move(p)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    std::vector<int64_t> axes = p_.attr_axes;
    if (inputs.size() > 1 && inputs[1] != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(axes, ReadInt64s(*inputs[1], "axes"));
    }
    if (axes.empty() && p_.noop_with_empty_axes) {
      outputs[0] = x;
      return absl::OkStatus();
    }
    std::vector<bool> reduced(x.rank(), axes.empty());
    for (int64_t a : axes) {
      QFUSE_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(a, x.rank()));
      if (reduced[axis]) return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is repeated in axes"));
      reduced[axis] = true;
    }
    std::vector<int64_t> out_dims;
    std::vector<DimGroup> groups;
    for (int64_t d = 0; d < x.rank(); ++d) {
      const int64_t size = x.dims()[d];
      if (!reduced[d] || p_.keepdims) out_dims.push_back(reduced[d] ? 1 : size);
      if (size == 1) continue;
      if (!groups.empty() && groups.back().reduced == reduced[d]) {
        groups.back().size *= size;
      } else {
        groups.push_back({size, reduced[d]});
      }
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(x.dtype(), out_dims));
    switch (x.dtype()) {
      case DataType::kFloat32: return Compute<float>(ctx, x, groups, &outputs[0]);
      case DataType::kFloat64: return Compute<double>(ctx, x, groups, &outputs[0]);
      case DataType::kInt32: return Compute<int32_t>(ctx, x, groups, &outputs[0]);
      case DataType::kInt64: return Compute<int64_t>(ctx, x, groups, &outputs[0]);
      case DataType::kInt8:
      case DataType::kUint8:
        if (p_.op == ReduceOp::kMax) {
          return x.dtype() == DataType::kInt8 ? Compute<int8_t>(ctx, x, groups, &outputs[0])
                                              : Compute<uint8_t>(ctx, x, groups, &outputs[0]);
        }
        break;
      default:
        break;
    }
    return absl::UnimplementedError(absl::StrCat("reduction of ", ir::DataTypeName(x.dtype()), " input"));
  }

 private:
  template <typename T>
  absl::Status Compute(const KernelContext& ctx, const Tensor& x, const std::vector<DimGroup>& groups, Tensor* y) const {
    int64_t reduced_groups = 0;
    for (const DimGroup& g : groups) reduced_groups += g.reduced ? 1 : 0;
    if (reduced_groups <= 1) {
      int64_t outer = 1, red = 1, inner = 1;
      bool seen_reduced = false;
      for (const DimGroup& g : groups) {
        if (g.reduced) {
          red = g.size;
          seen_reduced = true;
        } else {
          (seen_reduced ? inner : outer) *= g.size;
        }
      }
      if (x.num_elements() == 0) {
        // A zero-size kept dim leaves nothing to compute; a zero-size reduced one
        // still needs every output initialised.
        if (y->num_elements() == 0) return absl::OkStatus();
        red = 0;
        outer = y->num_elements();
        inner = 1;
      }
      ReduceBlocked<T>(ctx, p_.op, x.data<T>(), y->data<T>(), outer, red, inner);
      return absl::OkStatus();
    }
    ReduceGeneral<T>(p_.op, x.data<T>(), y->data<T>(), groups, x.num_elements(), y->num_elements());
    return absl::OkStatus();
  }

  ReduceParams p_;
};

// ---------------------------------------------------------------- ArgMax

struct ArgMaxParams {
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last_index = false;
};

template <typename T>
void ArgMaxRows(const T* x, int64_t axis, int64_t inner, bool last, int64_t begin, int64_t end, int64_t* y) {
  for (int64_t o = begin; o < end; ++o) {
    const T* xo = x + o * axis * inner;
    for (int64_t i = 0; i < inner; ++i) {
      T best = xo[i];
      int64_t best_index = 0;
      for (int64_t a = 1; a < axis; ++a) {
        const T v = xo[a * inner + i];
        if (v > best || (last && v == best)) {
          best = v;
          best_index = a;
        }
      }
      y[o * inner + i] = best_index;
    }
  }
}

class ArgMaxKernel : public Kernel {
 public:
  explicit ArgMaxKernel(ArgMaxParams p) : p_(p) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    if (x.rank() == 0) return absl::InvalidArgumentError("ArgMax input must have rank >= 1, got a scalar");
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(p_.axis, x.rank()));
    const nn_internal::AxisView v = nn_internal::ViewAroundAxis(x.dims(), axis);
    if (v.axis == 0) {
      return absl::InvalidArgumentError(absl::StrCat("ArgMax over axis ", axis, " of size 0 in shape ", ir::DimsToString(x.dims())));
    }
    std::vector<int64_t> out_dims;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d != axis) {
        out_dims.push_back(x.dims()[d]);
      } else if (p_.keepdims) {
        out_dims.push_back(1);
      }
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kInt64, out_dims));
    int64_t* yd = outputs[0].data<int64_t>();
    switch (x.dtype()) {
      case DataType::kFloat32: return Compute<float>(ctx, x.data<float>(), v, yd);
      case DataType::kFloat64: return Compute<double>(ctx, x.data<double>(), v, yd);
      case DataType::kInt8: return Compute<int8_t>(ctx, x.data<int8_t>(), v, yd);
      case DataType::kUint8: return Compute<uint8_t>(ctx, x.data<uint8_t>(), v, yd);
      case DataType::kInt32: return Compute<int32_t>(ctx, x.data<int32_t>(), v, yd);
      case DataType::kInt64: return Compute<int64_t>(ctx, x.data<int64_t>(), v, yd);
      default:
        return absl::UnimplementedError(absl::StrCat("ArgMax of ", ir::DataTypeName(x.dtype()), " input"));
    }
  }

 private:
  template <typename T>
  absl::Status Compute(const KernelContext& ctx, const T* x, const nn_internal::AxisView& v, int64_t* y) const {
    const bool last = p_.select_last_index;
    ctx.pool->ParallelFor(v.outer, MinChunk(v.axis * v.inner), [&](int64_t begin, int64_t end) {
      ArgMaxRows<T>(x, v.axis, v.inner, last, begin, end, y);
    });
    return absl::OkStatus();
  }

  ArgMaxParams p_;
};

absl::StatusOr<bool> GetFlag(const ir::Node& node, const std::string& name, int64_t fallback) {
  QFUSE_ASSIGN_OR_RETURN(int64_t v, node.attrs().GetInt(name, fallback));
  if (v != 0 && v != 1) return absl::InvalidArgumentError(absl::StrCat(name, " must be 0 or 1, got ", v));
  return v == 1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateReduceKernel(const ir::Node& node) {
  ReduceParams p;
  if (node.op_type() == "ReduceSum") {
    p.op = ReduceOp::kSum;
  } else if (node.op_type() == "ReduceMean") {
    p.op = ReduceOp::kMean;
  } else if (node.op_type() == "ReduceMax") {
    p.op = ReduceOp::kMax;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("CreateReduceKernel cannot run ", node.op_type()));
  }
  QFUSE_ASSIGN_OR_RETURN(p.keepdims, GetFlag(node, "keepdims", 1));
  QFUSE_ASSIGN_OR_RETURN(p.noop_with_empty_axes, GetFlag(node, "noop_with_empty_axes", 0));
  QFUSE_ASSIGN_OR_RETURN(p.attr_axes, node.attrs().GetInts("axes", {}));
  return std::unique_ptr<Kernel>(new ReduceKernel(std::move(p)));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateArgMaxKernel(const ir::Node& node) {
  ArgMaxParams p;
  QFUSE_ASSIGN_OR_RETURN(p.axis, node.attrs().GetInt("axis", 0));
  QFUSE_ASSIGN_OR_RETURN(p.keepdims, GetFlag(node, "keepdims", 1));
  QFUSE_ASSIGN_OR_RETURN(p.select_last_index, GetFlag(node, "select_last_index", 0));
  return std::unique_ptr<Kernel>(new ArgMaxKernel(p));
}

}  // namespace qfuse::runtime::kernels
