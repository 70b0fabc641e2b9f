// Concat and Split along one axis: both reduce to memcpy of contiguous blocks
// (outer x [axis extent x inner]).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/shape/shape_ops.h"
#include "runtime/kernels/shape/shape_util.h"

namespace qfuse::runtime::kernels {
namespace {

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(int64_t axis) : axis_(axis) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    if (inputs.empty()) return absl::InvalidArgumentError("Concat needs at least one input");
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, inputs.size()));
    const Tensor& first = *inputs[0];
    const int64_t rank = first.rank();
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, rank));
    std::vector<int64_t> out_dims = first.dims();
    out_dims[axis] = 0;
    for (const Tensor* t : inputs) {
      bool ok = t->dtype() == first.dtype() && t->rank() == rank;
      for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || t->dims()[d] == first.dims()[d];
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat("cannot concatenate ", ir::DataTypeName(t->dtype()),
                                                       ir::DimsToString(t->dims()), " with ",
                                                       ir::DataTypeName(first.dtype()),
                                                       ir::DimsToString(first.dims()), " on axis ", axis));
      }
      out_dims[axis] += t->dims()[axis];
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::CreateUninitialized(first.dtype(), out_dims));  // every byte copied
    const size_t esize = ir::ElementSize(first.dtype());
    const int64_t outer = DimProduct(out_dims, 0, axis);
    const int64_t inner_bytes = DimProduct(out_dims, axis + 1, rank) * static_cast<int64_t>(esize);
    const int64_t out_row = out_dims[axis] * inner_bytes;
    uint8_t* out = static_cast<uint8_t*>(y.raw_data());
    if (y.num_elements() > 0) {
      ctx.pool->ParallelFor(outer, MinRowsPerChunk(out_row), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          uint8_t* dst = out + o * out_row;
          for (const Tensor* t : inputs) {
            const int64_t block = t->dims()[axis] * inner_bytes;
            if (block > 0) std::memcpy(dst, static_cast<const uint8_t*>(t->raw_data()) + o * block, block);
            dst += block;
          }
        }
      });
    }
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

// Split(input, split?): without `split`, equal parts (the last one smaller when the
// axis does not divide evenly, as opset 18 allows).
class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(int64_t axis) : axis_(axis) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, x.rank()));
    const int64_t dim = x.dims()[axis];
    const int64_t n = static_cast<int64_t>(outputs.size());
    std::vector<int64_t> sizes;
    if (inputs.size() > 1 && inputs[1] != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(sizes, ReadInt64s(*inputs[1], "Split sizes"));
      int64_t total = 0;
      for (int64_t s : sizes) {
        if (s < 0) return absl::InvalidArgumentError("Split sizes must be >= 0");
        if (s > dim) {  // also keeps `total` from wrapping to `dim`
          return absl::InvalidArgumentError(absl::StrCat("Split size ", s, " exceeds dim ", dim));
        }
        total += s;
      }
      if (total != dim || static_cast<int64_t>(sizes.size()) != n) {
        return absl::InvalidArgumentError(absl::StrCat("Split sizes ", ir::DimsToString(sizes), " do not split dim ",
                                                       dim, " into ", n, " outputs"));
      }
    } else {
      if (n == 0) return absl::InvalidArgumentError("Split has no outputs");
      const int64_t part = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(part, dim - i * part)));
    }
    const size_t esize = ir::ElementSize(x.dtype());
    const int64_t outer = DimProduct(x.dims(), 0, axis);
    const int64_t inner_bytes = DimProduct(x.dims(), axis + 1, x.rank()) * static_cast<int64_t>(esize);
    const int64_t in_row = dim * inner_bytes;
    const uint8_t* in = static_cast<const uint8_t*>(x.raw_data());
    int64_t offset = 0;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> dims = x.dims();
      dims[axis] = sizes[i];
      QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), dims));
      const int64_t block = sizes[i] * inner_bytes;
      uint8_t* out = static_cast<uint8_t*>(y.raw_data());
      if (block > 0) {
        for (int64_t o = 0; o < outer; ++o) std::memcpy(out + o * block, in + o * in_row + offset, block);
      }
      offset += block;
      outputs[i] = std::move(y);
    }
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateConcatKernel(const ir::Node& node) {
  if (!node.attrs().Has("axis")) return absl::InvalidArgumentError("Concat needs an axis attribute");
  QFUSE_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  return MakeConcatKernel(axis);
}

std::unique_ptr<Kernel> MakeConcatKernel(int64_t axis) { return std::unique_ptr<Kernel>(new ConcatKernel(axis)); }

absl::StatusOr<std::unique_ptr<Kernel>> CreateSplitKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  return std::unique_ptr<Kernel>(new SplitKernel(axis));
}

}  // namespace qfuse::runtime::kernels
