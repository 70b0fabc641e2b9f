// Pad with constant, reflect, edge or wrap mode. Negative pads crop. Each axis gets
// a source-index table (output coordinate -> input coordinate, or "constant"), built
// once per Run; rows are then filled from the tables.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/checked_math.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/shape/shape_ops.h"
#include "runtime/kernels/shape/shape_util.h"

namespace qfuse::runtime::kernels {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

constexpr int64_t kUseConstant = -1;

// Input coordinate for output coordinate `o` of an axis with `before` leading pads.
int64_t SourceIndex(PadMode mode, int64_t o, int64_t before, int64_t dim) {
  int64_t i = o - before;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case PadMode::kConstant: return kUseConstant;
    case PadMode::kEdge: return i < 0 ? 0 : dim - 1;
    case PadMode::kWrap: return ((i % dim) + dim) % dim;
    case PadMode::kReflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      i = i < 0 ? -i : i;
      i %= period;
      return i < dim ? i : period - i;
    }
  }
  return kUseConstant;
}

class PadKernel : public Kernel {
 public:
  explicit PadKernel(PadMode mode) : mode_(mode) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    const int64_t rank = x.rank();
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ReadInt64s(*inputs[1], "Pad pads"));
    std::vector<int64_t> axes;
    if (inputs.size() > 3 && inputs[3] != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> raw, ReadInt64s(*inputs[3], "Pad axes"));
      for (int64_t a : raw) {
        QFUSE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a, rank));
        axes.push_back(axis);
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    const int64_t n = static_cast<int64_t>(axes.size());
    if (static_cast<int64_t>(pads.size()) != 2 * n) {
      return absl::InvalidArgumentError(absl::StrCat("Pad pads has ", pads.size(), " values, expected ", 2 * n));
    }
    std::vector<int64_t> before(rank, 0), out_dims = x.dims();
    for (int64_t k = 0; k < n; ++k) {
      const int64_t axis = axes[k];
      before[axis] = pads[k];
      QFUSE_ASSIGN_OR_RETURN(const int64_t padded, base::CheckedAdd(x.dims()[axis], pads[k], "Pad begin"));
      QFUSE_ASSIGN_OR_RETURN(out_dims[axis], base::CheckedAdd(padded, pads[k + n], "Pad end"));
      if (out_dims[axis] < 0) {
        return absl::InvalidArgumentError(absl::StrCat("Pad pads ", ir::DimsToString(pads), " crop axis ", axis,
                                                       " of shape ", ir::DimsToString(x.dims()), " below 0"));
      }
      if (x.dims()[axis] == 0 && out_dims[axis] > 0 && mode_ != PadMode::kConstant) {
        return absl::InvalidArgumentError(absl::StrCat("cannot pad empty axis ", axis, " in non-constant mode"));
      }
    }
    const size_t esize = ir::ElementSize(x.dtype());
    std::vector<uint8_t> value(esize, 0);
    if (inputs.size() > 2 && inputs[2] != nullptr && mode_ == PadMode::kConstant) {
      const Tensor& v = *inputs[2];
      if (v.dtype() != x.dtype() || v.num_elements() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("Pad constant_value must be one ", ir::DataTypeName(x.dtype()),
                                                       " value"));
      }
      std::memcpy(value.data(), v.raw_data(), esize);
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), out_dims));
    if (y.num_elements() == 0) {
      outputs[0] = std::move(y);
      return absl::OkStatus();
    }
    if (rank == 0) {
      std::memcpy(y.raw_data(), x.raw_data(), esize);
      outputs[0] = std::move(y);
      return absl::OkStatus();
    }
    // Per-axis source tables, concatenated.
    std::vector<std::vector<int64_t>> source(rank);
    for (int64_t d = 0; d < rank; ++d) {
      source[d].resize(out_dims[d]);
      for (int64_t o = 0; o < out_dims[d]; ++o) source[d][o] = SourceIndex(mode_, o, before[d], x.dims()[d]);
    }
    const std::vector<int64_t> in_strides = Strides(x.dims());
    const int64_t inner = out_dims.back();
    const int64_t rows = y.num_elements() / inner;
    const std::vector<int64_t> outer_dims(out_dims.begin(), out_dims.end() - 1);
    QFUSE_RETURN_IF_ERROR(DispatchElementSize(esize, [&](auto tag) {
      using U = decltype(tag);
      U fill;
      std::memcpy(&fill, value.data(), sizeof(U));
      const U* in = static_cast<const U*>(x.raw_data());
      U* out = static_cast<U*>(y.raw_data());
      const std::vector<int64_t>& last = source[rank - 1];
      ctx.pool->ParallelFor(rows, MinRowsPerChunk(inner * sizeof(U)), [&](int64_t r0, int64_t r1) {
        // The walker tracks output coordinates; offsets come from the tables.
        RowWalker walker(outer_dims, std::vector<int64_t>(outer_dims.size(), 0));
        walker.Seek(r0);
        for (int64_t r = r0; r < r1; ++r, walker.Next()) {
          U* dst = out + r * inner;
          int64_t base = 0;
          bool constant_row = false;
          for (int64_t d = 0; d + 1 < rank; ++d) {
            const int64_t s = source[d][walker.index()[d]];
            if (s == kUseConstant) {
              constant_row = true;
              break;
            }
            base += s * in_strides[d];
          }
          if (constant_row) {
            std::fill(dst, dst + inner, fill);
            continue;
          }
          const U* src = in + base;
          for (int64_t j = 0; j < inner; ++j) dst[j] = last[j] == kUseConstant ? fill : src[last[j]];
        }
      });
      return absl::OkStatus();
    }));
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }

 private:
  PadMode mode_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreatePadKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "constant"));
  PadMode m;
  if (mode == "constant") {
    m = PadMode::kConstant;
  } else if (mode == "reflect") {
    m = PadMode::kReflect;
  } else if (mode == "edge") {
    m = PadMode::kEdge;
  } else if (mode == "wrap") {
    m = PadMode::kWrap;
  } else {
    return absl::UnimplementedError(absl::StrCat("Pad mode '", mode, "'"));
  }
  return std::unique_ptr<Kernel>(new PadKernel(m));
}

}  // namespace qfuse::runtime::kernels
