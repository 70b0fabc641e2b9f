// Private helpers of the data-movement kernels: dispatch on element size (these
// kernels move bits, never interpret them), output-row iteration and dim products.
#ifndef QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_UTIL_H_
#define QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/tensor.h"

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

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_UTIL_H_
