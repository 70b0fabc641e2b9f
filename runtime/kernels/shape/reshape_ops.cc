// Kernels that only relabel or describe a shape, or fill one: Flatten, Reshape,
// Squeeze, Unsqueeze, Shape, ConstantOfShape and Expand.
#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/checked_math.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/shape/shape_ops.h"
#include "runtime/kernels/shape/shape_util.h"

namespace qfuse::runtime::kernels {
namespace {

// A copy of `x` with new dims (same element count, or an error).
absl::StatusOr<Tensor> Relabel(const Tensor& x, std::vector<int64_t> dims) {
  Tensor y = x;
  QFUSE_RETURN_IF_ERROR(y.SetDims(std::move(dims)));
  return y;
}

class FlattenKernel : public Kernel {
 public:
  explicit FlattenKernel(int64_t axis) : axis_(axis) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    const int64_t rank = x.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis > rank) {
      return absl::InvalidArgumentError(absl::StrCat("Flatten axis ", axis_, " is out of range for rank ", rank));
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Relabel(x, {DimProduct(x.dims(), 0, axis), DimProduct(x.dims(), axis, rank)}));
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

class ReshapeKernel : public Kernel {
 public:
  explicit ReshapeKernel(bool allow_zero) : allow_zero_(allow_zero) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ReadInt64s(*inputs[1], "Reshape shape"));
    int64_t infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allow_zero_) {
        if (static_cast<int64_t>(i) >= x.rank()) {
          return absl::InvalidArgumentError(absl::StrCat("Reshape shape ", ir::DimsToString(shape), " copies dim ", i,
                                                         " of a rank-", x.rank(), " input"));
        }
        shape[i] = x.dims()[i];
      }
      if (shape[i] == -1) {
        if (infer >= 0) return absl::InvalidArgumentError("Reshape shape has more than one -1");
        infer = static_cast<int64_t>(i);
      } else if (shape[i] < 0) {
        return absl::InvalidArgumentError(absl::StrCat("Reshape shape ", ir::DimsToString(shape), " has a negative dim"));
      } else if (__builtin_mul_overflow(known, shape[i], &known)) {
        return absl::InvalidArgumentError(absl::StrCat("Reshape shape ", ir::DimsToString(shape), " overflows int64"));
      }
    }
    if (infer >= 0) {
      if (known == 0 || x.num_elements() % known != 0) {
        return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", ir::DimsToString(x.dims()), " to ",
                                                       ir::DimsToString(shape)));
      }
      shape[infer] = x.num_elements() / known;
    } else if (known != x.num_elements()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", ir::DimsToString(x.dims()), " to ",
                                                     ir::DimsToString(shape)));
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Relabel(x, std::move(shape)));
    return absl::OkStatus();
  }

 private:
  bool allow_zero_;
};

// Squeeze(data, axes?): without axes, drops every size-1 dim.
class SqueezeKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    std::vector<bool> drop(x.rank(), false);
    if (inputs.size() > 1 && inputs[1] != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ReadInt64s(*inputs[1], "Squeeze axes"));
      for (int64_t a : axes) {
        QFUSE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a, x.rank()));
        if (x.dims()[axis] != 1) {
          return absl::InvalidArgumentError(absl::StrCat("cannot squeeze axis ", a, " of shape ",
                                                         ir::DimsToString(x.dims()), ": size is not 1"));
        }
        drop[axis] = true;
      }
    } else {
      for (int64_t d = 0; d < x.rank(); ++d) drop[d] = x.dims()[d] == 1;
    }
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (!drop[d]) dims.push_back(x.dims()[d]);
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Relabel(x, std::move(dims)));
    return absl::OkStatus();
  }
};

class UnsqueezeKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ReadInt64s(*inputs[1], "Unsqueeze axes"));
    const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
    std::vector<bool> inserted(out_rank, false);
    for (int64_t a : axes) {
      QFUSE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a, out_rank));
      if (inserted[axis]) return absl::InvalidArgumentError(absl::StrCat("Unsqueeze axis ", a, " is repeated"));
      inserted[axis] = true;
    }
    std::vector<int64_t> dims(out_rank, 1);
    size_t next = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
      if (!inserted[d]) dims[d] = x.dims()[next++];
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Relabel(x, std::move(dims)));
    return absl::OkStatus();
  }
};

// Shape(data) with optional start/end (clamped to [0, rank]).
// Reads only the dims, so any layout is taken as it is (no conversion to plain).
class ShapeKernel : public Kernel {
 public:
  ShapeKernel(int64_t start, std::optional<int64_t> end) : start_(start), end_(end) {}
  bool accepts_layout(int input, LayoutKind kind) const override { return true; }
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const std::vector<int64_t> shape =
        ctx.input_layouts != nullptr ? PlainDims(*inputs[0], ctx.input_layouts[0]) : inputs[0]->dims();
    const int64_t rank = static_cast<int64_t>(shape.size());
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t start = clamp(start_);
    const int64_t end = end_.has_value() ? clamp(*end_) : rank;
    std::vector<int64_t> dims;
    for (int64_t d = start; d < end; ++d) dims.push_back(shape[d]);
    outputs[0] = Tensor::FromVector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
    return absl::OkStatus();
  }

 private:
  int64_t start_;
  std::optional<int64_t> end_;
};

absl::StatusOr<std::vector<int64_t>> ReadShape(const Tensor& t, const std::string& what) {
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInt64s(t, what));
  for (int64_t d : dims) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, " ", ir::DimsToString(dims), " has a negative dim"));
  }
  return dims;
}

class ConstantOfShapeKernel : public Kernel {
 public:
  explicit ConstantOfShapeKernel(Tensor value) : value_(std::move(value)) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadShape(*inputs[0], "ConstantOfShape shape"));
    QFUSE_RETURN_IF_ERROR(base::CheckedByteCount(dims, ir::ElementSize(value_.dtype()), "ConstantOfShape").status());
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(value_.dtype(), std::move(dims)));
    const size_t esize = ir::ElementSize(value_.dtype());
    uint8_t* out = static_cast<uint8_t*>(y.raw_data());
    for (int64_t i = 0; i < y.num_elements(); ++i) std::memcpy(out + i * esize, value_.raw_data(), esize);
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }

 private:
  Tensor value_;
};

// Expand(input, shape): numpy broadcast of the input against `shape`.
class ExpandKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ReadShape(*inputs[1], "Expand shape"));
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, BroadcastShapes(x.dims(), shape));
    QFUSE_RETURN_IF_ERROR(base::CheckedByteCount(out_dims, ir::ElementSize(x.dtype()), "Expand output").status());
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), out_dims));
    if (y.num_elements() == 0) {
      outputs[0] = std::move(y);
      return absl::OkStatus();
    }
    if (out_dims.empty()) out_dims = {1};
    const std::vector<int64_t> strides = BroadcastStrides(x.dims(), out_dims);
    const int64_t rank = static_cast<int64_t>(out_dims.size());
    const int64_t inner = out_dims.back();
    const int64_t inner_stride = strides.back();
    const int64_t rows = y.num_elements() / inner;
    QFUSE_RETURN_IF_ERROR(DispatchElementSize(ir::ElementSize(x.dtype()), [&](auto tag) {
      using U = decltype(tag);
      const U* in = static_cast<const U*>(x.raw_data());
      U* out = static_cast<U*>(y.raw_data());
      ctx.pool->ParallelFor(rows, MinRowsPerChunk(inner * sizeof(U)), [&](int64_t begin, int64_t end) {
        RowWalker walker({out_dims.begin(), out_dims.begin() + rank - 1}, {strides.begin(), strides.begin() + rank - 1});
        walker.Seek(begin);
        for (int64_t r = begin; r < end; ++r, walker.Next()) {
          const U* src = in + walker.offset();
          U* dst = out + r * inner;
          if (inner_stride == 0) {
            std::fill(dst, dst + inner, *src);
          } else {
            std::memcpy(dst, src, inner * sizeof(U));
          }
        }
      });
      return absl::OkStatus();
    }));
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateFlattenKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 1));
  return std::unique_ptr<Kernel>(new FlattenKernel(axis));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateReshapeKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(int64_t allow_zero, node.attrs().GetInt("allowzero", 0));
  return std::unique_ptr<Kernel>(new ReshapeKernel(allow_zero != 0));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateSqueezeKernel(const ir::Node& node) {
  return std::unique_ptr<Kernel>(new SqueezeKernel());
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateUnsqueezeKernel(const ir::Node& node) {
  return std::unique_ptr<Kernel>(new UnsqueezeKernel());
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateShapeKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(int64_t start, node.attrs().GetInt("start", 0));
  std::optional<int64_t> end;
  if (node.attrs().Has("end")) {
    QFUSE_ASSIGN_OR_RETURN(end, node.attrs().GetInt("end", 0));
  }
  return std::unique_ptr<Kernel>(new ShapeKernel(start, end));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateConstantOfShapeKernel(const ir::Node& node) {
  Tensor value = Tensor::Scalar<float>(0.f);
  if (node.attrs().Has("value")) {
    QFUSE_ASSIGN_OR_RETURN(const Tensor* t, node.attrs().GetTensor("value"));
    if (t->num_elements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("ConstantOfShape value must have one element, has ",
                                                     t->num_elements()));
    }
    value = *t;
  }
  return std::unique_ptr<Kernel>(new ConstantOfShapeKernel(std::move(value)));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateExpandKernel(const ir::Node& node) {
  return std::unique_ptr<Kernel>(new ExpandKernel());
}

}  // namespace qfuse::runtime::kernels
