// Slice (starts/ends clamped as ONNX specifies, negative steps, optional axes and
// steps) and Gather (negative indices wrap once; out-of-range is an error).
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/shape/shape_ops.h"
#include "runtime/kernels/shape/shape_util.h"

namespace qfuse::runtime::kernels {
namespace {

class SliceKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 3));
    const Tensor& x = *inputs[0];
    const int64_t rank = x.rank();
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> starts, ReadInt64s(*inputs[1], "Slice starts"));
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> ends, ReadInt64s(*inputs[2], "Slice ends"));
    std::vector<int64_t> axes, steps;
    if (inputs.size() > 3 && inputs[3] != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(axes, ReadInt64s(*inputs[3], "Slice axes"));
    } else {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (inputs.size() > 4 && inputs[4] != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(steps, ReadInt64s(*inputs[4], "Slice steps"));
    } else {
      steps.assign(starts.size(), 1);
    }
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      return absl::InvalidArgumentError("Slice starts, ends, axes and steps differ in length");
    }
    std::vector<int64_t> begin(rank, 0), step(rank, 1), out_dims = x.dims();
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < starts.size(); ++i) {
      QFUSE_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axes[i], rank));
      if (seen[axis]) return absl::InvalidArgumentError(absl::StrCat("Slice axis ", axes[i], " is repeated"));
      seen[axis] = true;
      const int64_t dim = x.dims()[axis];
      if (steps[i] == 0) return absl::InvalidArgumentError("Slice step is 0");
      // |step| beyond any dim selects one element; clamping keeps the arithmetic in range.
      const int64_t s = std::max<int64_t>(steps[i], -std::numeric_limits<int64_t>::max());
      int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
      int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
      int64_t count;
      if (dim == 0) {
        start = 0;
        count = 0;
      } else if (s > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        count = end > start ? (end - start - 1) / s + 1 : 0;
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        count = start > end ? (start - end - 1) / -s + 1 : 0;
      }
      begin[axis] = start;
      step[axis] = s;
      out_dims[axis] = count;
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), out_dims));
    if (y.num_elements() > 0) {
      const std::vector<int64_t> in_strides = Strides(x.dims());
      int64_t base = 0;
      std::vector<int64_t> strides(rank);
      for (int64_t d = 0; d < rank; ++d) {
        base += begin[d] * in_strides[d];
        strides[d] = step[d] * in_strides[d];
      }
      if (rank == 0) {
        std::memcpy(y.raw_data(), x.raw_data(), x.byte_size());
      } else {
        QFUSE_RETURN_IF_ERROR(DispatchElementSize(ir::ElementSize(x.dtype()), [&](auto tag) {
          using U = decltype(tag);
          CopyStridedRows(*ctx.pool, out_dims, strides, static_cast<const U*>(x.raw_data()) + base,
                          static_cast<U*>(y.raw_data()));
          return absl::OkStatus();
        }));
      }
    }
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }
};

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(int64_t axis) : axis_(axis) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    const Tensor& indices = *inputs[1];
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, x.rank()));
    const int64_t dim = x.dims()[axis];
    std::vector<int64_t> idx(indices.num_elements());
    if (indices.dtype() == DataType::kInt64) {
      for (int64_t i = 0; i < indices.num_elements(); ++i) idx[i] = indices.data<int64_t>()[i];
    } else if (indices.dtype() == DataType::kInt32) {
      for (int64_t i = 0; i < indices.num_elements(); ++i) idx[i] = indices.data<int32_t>()[i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("Gather indices must be INT64 or INT32, got ",
                                                     ir::DataTypeName(indices.dtype())));
    }
    for (int64_t& i : idx) {
      if (i < -dim || i >= dim) {
        return absl::InvalidArgumentError(absl::StrCat("Gather index ", i, " is out of range for axis ", axis,
                                                       " of size ", dim));
      }
      if (i < 0) i += dim;
    }
    std::vector<int64_t> out_dims(x.dims().begin(), x.dims().begin() + axis);
    out_dims.insert(out_dims.end(), indices.dims().begin(), indices.dims().end());
    out_dims.insert(out_dims.end(), x.dims().begin() + axis + 1, x.dims().end());
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), out_dims));
    const int64_t outer = DimProduct(x.dims(), 0, axis);
    const int64_t block = DimProduct(x.dims(), axis + 1, x.rank()) * static_cast<int64_t>(ir::ElementSize(x.dtype()));
    const int64_t n = static_cast<int64_t>(idx.size());
    const uint8_t* in = static_cast<const uint8_t*>(x.raw_data());
    uint8_t* out = static_cast<uint8_t*>(y.raw_data());
    if (y.num_elements() > 0) {
      ctx.pool->ParallelFor(outer * n, MinRowsPerChunk(block), [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const int64_t o = k / n;
          std::memcpy(out + k * block, in + (o * dim + idx[k - o * n]) * block, block);
        }
      });
    }
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateSliceKernel(const ir::Node& node) {
  return std::unique_ptr<Kernel>(new SliceKernel());
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateGatherKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  return std::unique_ptr<Kernel>(new GatherKernel(axis));
}

}  // namespace qfuse::runtime::kernels
