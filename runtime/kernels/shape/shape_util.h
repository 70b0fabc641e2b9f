// Private helpers of the data-movement kernels: dispatch on element size (these
// kernels move bits, never interpret them), output-row iteration, strided row copies
// and dim products.
#ifndef QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_UTIL_H_
#define QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/tensor.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels {

// Calls f(U{}) with U the unsigned integer type as wide as one element.
template <typename F>
absl::Status DispatchElementSize(size_t size, F&& f) {
  switch (size) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: return absl::UnimplementedError(absl::StrCat("element size ", size));
  }
}

// Product of dims[begin, end).
inline int64_t DimProduct(absl::Span<const int64_t> dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// Walks the rows (all axes but the last) of a row-major shape in order, tracking a
// source offset that moves by `strides[axis]` per step along each axis. Positioned at
// any row in O(rank), then advanced in amortised O(1).
class RowWalker {
 public:
  // `dims` and `strides` cover the outer axes only (rank - 1 entries).
  RowWalker(std::vector<int64_t> dims, std::vector<int64_t> strides)
      : dims_(std::move(dims)), strides_(std::move(strides)), index_(dims_.size(), 0) {}

  void Seek(int64_t row) {
    offset_ = 0;
    for (int64_t d = static_cast<int64_t>(dims_.size()) - 1; d >= 0; --d) {
      index_[d] = row % dims_[d];
      row /= dims_[d];
      offset_ += index_[d] * strides_[d];
    }
  }
  void Next() {
    for (int64_t d = static_cast<int64_t>(dims_.size()) - 1; d >= 0; --d) {
      offset_ += strides_[d];
      if (++index_[d] < dims_[d]) return;
      offset_ -= index_[d] * strides_[d];
      index_[d] = 0;
    }
  }
  int64_t offset() const { return offset_; }
  const std::vector<int64_t>& index() const { return index_; }

 private:
  std::vector<int64_t> dims_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

// Rows per parallel chunk so each chunk moves at least ~64 KiB.
inline int64_t MinRowsPerChunk(int64_t row_bytes) {
  constexpr int64_t kChunkBytes = 64 * 1024;
  return row_bytes <= 0 ? 1 : std::max<int64_t>(1, kChunkBytes / row_bytes);
}

// out[i...] = in[sum_d i[d] * in_strides[d]] over the row-major shape out_dims (rank >= 1),
// a row per parallel step: memcpy when the last axis has stride 1, a strided gather
// otherwise.
template <typename U>
void CopyStridedRows(const ThreadPool& pool, absl::Span<const int64_t> out_dims, absl::Span<const int64_t> in_strides,
                     const U* in, U* out) {
  const size_t rank = out_dims.size();
  const int64_t inner = out_dims.back();
  const int64_t inner_stride = in_strides.back();
  const int64_t rows = DimProduct(out_dims, 0, rank - 1);
  std::vector<int64_t> outer_dims(out_dims.begin(), out_dims.end() - 1);
  std::vector<int64_t> outer_strides(in_strides.begin(), in_strides.end() - 1);
  pool.ParallelFor(rows, MinRowsPerChunk(inner * sizeof(U)), [&](int64_t begin, int64_t end) {
    RowWalker walker(outer_dims, outer_strides);
    walker.Seek(begin);
    for (int64_t r = begin; r < end; ++r, walker.Next()) {
      const U* src = in + walker.offset();
      U* dst = out + r * inner;
      if (inner_stride == 1) {
        std::memcpy(dst, src, inner * sizeof(U));
      } else {
        for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * inner_stride];
      }
    }
  });
}

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_UTIL_H_
