// Transpose: axes are collapsed first (size-1 axes dropped, input-adjacent axes that
// stay adjacent merged), then output rows are filled by memcpy when the innermost
// axis is kept, or by a strided gather otherwise (tiled when the innermost output
// axis has a large input stride, to keep cache lines in use). Byte tensors whose transpose
// is a batch of whole matrix transposes (attention's K^T in int8 graphs) take the 16 x 16
// byte tiles of runtime/kernels/quant/byte_transpose.h.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/quant/byte_transpose.h"
#include "runtime/kernels/shape/shape_ops.h"
#include "runtime/kernels/shape/shape_util.h"

namespace qfuse::runtime::kernels {
namespace {

struct CollapsedTranspose {
  std::vector<int64_t> out_dims;     // collapsed output dims
  std::vector<int64_t> in_strides;   // input stride (elements) of each collapsed output axis
};

CollapsedTranspose Collapse(absl::Span<const int64_t> dims, absl::Span<const int64_t> perm) {
  const std::vector<int64_t> strides = Strides(dims);
  CollapsedTranspose c;
  int64_t prev_axis = -2;
  for (int64_t axis : perm) {
    if (dims[axis] == 1) continue;
    if (axis == prev_axis + 1 && !c.out_dims.empty()) {
      // Input axis follows the previous one in both orders: merge.
      c.out_dims.back() *= dims[axis];
      c.in_strides.back() = strides[axis];
    } else {
      c.out_dims.push_back(dims[axis]);
      c.in_strides.push_back(strides[axis]);
    }
    prev_axis = axis;
  }
  return c;
}

// Tiled path for the common "last output axis comes from a strided input axis" case
// when the second-to-last output axis is the input's innermost (stride 1): copies
// kTile x kTile blocks so both reads and writes stay within a few cache lines.
template <typename U>
void TransposeTiled(const ThreadPool& pool, const CollapsedTranspose& c, const U* in, U* out) {
  constexpr int64_t kTile = 32;
  const int64_t rank = static_cast<int64_t>(c.out_dims.size());
  const int64_t rows_dim = c.out_dims[rank - 2];  // input-contiguous axis
  const int64_t cols = c.out_dims[rank - 1];
  const int64_t col_stride = c.in_strides[rank - 1];
  const int64_t batches = DimProduct(c.out_dims, 0, rank - 2);
  const int64_t row_tiles = (rows_dim + kTile - 1) / kTile;
  std::vector<int64_t> outer_dims(c.out_dims.begin(), c.out_dims.end() - 2);
  std::vector<int64_t> outer_strides(c.in_strides.begin(), c.in_strides.end() - 2);
  const int64_t work = batches * row_tiles;
  pool.ParallelFor(work, std::max<int64_t>(1, 16384 / (kTile * cols)),
                   [&](int64_t begin, int64_t end) {
    RowWalker walker(outer_dims, outer_strides);
    for (int64_t w = begin; w < end; ++w) {
      const int64_t batch = w / row_tiles;
      const int64_t r0 = (w % row_tiles) * kTile;
      const int64_t r1 = std::min(rows_dim, r0 + kTile);
      walker.Seek(batch);
      const U* src = in + walker.offset();
      U* dst = out + batch * rows_dim * cols;
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t j = c0; j < c1; ++j) dst[r * cols + j] = src[r + j * col_stride];
        }
      }
    }
  });
}

// A collapsed transpose that is `matrices` transposes of contiguous [rows][cols] matrices
// (output [cols][rows] each).
struct MatrixBatch {
  int64_t matrices, rows, cols;
};

// The matrix batch of c, when its last output axis is strided over the input's rows, the one
// before it is the input's innermost and any axis before them walks whole matrices in order;
// both sides fit the byte tiles (TileTransposeFits).
std::optional<MatrixBatch> AsMatrixBatch(const CollapsedTranspose& c) {
  const size_t r = c.out_dims.size();
  if (r < 2 || r > 3) return std::nullopt;
  const int64_t cols_out = c.out_dims[r - 2], rows_out = c.out_dims[r - 1];
  if (c.in_strides[r - 2] != 1 || c.in_strides[r - 1] != cols_out || !quant::TileTransposeFits(rows_out, cols_out)) {
    return std::nullopt;
  }
  const int64_t matrices = r == 3 ? c.out_dims[0] : 1;
  if (r == 3 && c.in_strides[0] != rows_out * cols_out) return std::nullopt;
  return MatrixBatch{matrices, rows_out, cols_out};
}

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(std::vector<int64_t> perm) : perm_(std::move(perm)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    const int64_t rank = x.rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      perm.resize(rank);
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    if (static_cast<int64_t>(perm.size()) != rank) {
      return absl::InvalidArgumentError(absl::StrCat("Transpose perm has ", perm.size(), " entries for rank ", rank));
    }
    std::vector<bool> seen(rank, false);
    std::vector<int64_t> out_dims(rank);
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t p = perm[i];
      if (p < 0 || p >= rank || seen[p]) {
        return absl::InvalidArgumentError(absl::StrCat("Transpose perm ", ir::DimsToString(perm), " is not a permutation"));
      }
      seen[p] = true;
      out_dims[i] = x.dims()[p];
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::CreateUninitialized(x.dtype(), out_dims));  // every path writes all
    const CollapsedTranspose c = Collapse(x.dims(), perm);
    if (y.num_elements() == 0) {
      // Nothing to move.
    } else if (c.out_dims.size() <= 1) {  // at most one axis longer than 1: same order
      std::memcpy(y.raw_data(), x.raw_data(), x.byte_size());
    } else if (const std::optional<MatrixBatch> m = AsMatrixBatch(c);
               m.has_value() && ir::ElementSize(x.dtype()) == 1) {
      quant::TransposeBytes(*ctx.pool, static_cast<const uint8_t*>(x.raw_data()), m->matrices, m->rows, m->cols,
                            static_cast<uint8_t*>(y.raw_data()));
    } else {
      QFUSE_RETURN_IF_ERROR(DispatchElementSize(ir::ElementSize(x.dtype()), [&](auto tag) {
        using U = decltype(tag);
        const U* in = static_cast<const U*>(x.raw_data());
        U* out = static_cast<U*>(y.raw_data());
        const size_t r = c.out_dims.size();
        if (c.in_strides[r - 1] != 1 && c.in_strides[r - 2] == 1 && c.out_dims[r - 1] >= 8) {
          TransposeTiled(*ctx.pool, c, in, out);
        } else {
          CopyStridedRows(*ctx.pool, c.out_dims, c.in_strides, in, out);
        }
        return absl::OkStatus();
      }));
    }
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }

 private:
  std::vector<int64_t> perm_;  // empty: reverse the axes
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateTransposeKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> perm, node.attrs().GetInts("perm", {}));
  return std::unique_ptr<Kernel>(new TransposeKernel(std::move(perm)));
}

}  // namespace qfuse::runtime::kernels
