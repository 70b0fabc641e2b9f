#include "runtime/kernels/quant/byte_transpose.h"

#include <emmintrin.h>

#include <algorithm>

namespace qfuse::runtime::kernels::quant {
namespace {

constexpr int64_t kTile = 16;
// Bytes of work below which a transpose runs on the calling thread.
constexpr int64_t kMinParallelBytes = int64_t{64} << 10;

// The 16 x 16 tile at s (row stride ss) transposed to d (row stride ds).
inline void TransposeTile(const uint8_t* s, int64_t ss, uint8_t* d, int64_t ds) {
  __m128i a[kTile], b[kTile];
  for (int i = 0; i < kTile; ++i) a[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i * ss));
  // b[2i], b[2i + 1]: rows 2i and 2i + 1 interleaved, columns 0-7 and 8-15.
  for (int i = 0; i < 8; ++i) {
    b[2 * i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
    b[2 * i + 1] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
  }
  // a[4i + 2h + k]: rows 4i..4i+3, columns 8h + 4k .. 8h + 4k + 3 (4 bytes per column).
  for (int i = 0; i < 4; ++i) {
    for (int h = 0; h < 2; ++h) {
      a[4 * i + 2 * h] = _mm_unpacklo_epi16(b[4 * i + h], b[4 * i + 2 + h]);
      a[4 * i + 2 * h + 1] = _mm_unpackhi_epi16(b[4 * i + h], b[4 * i + 2 + h]);
    }
  }
  // b[8i + 2q + k]: rows 8i..8i+7, columns 4q + 2k and 4q + 2k + 1 (8 bytes per column).
  for (int i = 0; i < 2; ++i) {
    for (int q = 0; q < 4; ++q) {
      b[8 * i + 2 * q] = _mm_unpacklo_epi32(a[8 * i + q], a[8 * i + 4 + q]);
      b[8 * i + 2 * q + 1] = _mm_unpackhi_epi32(a[8 * i + q], a[8 * i + 4 + q]);
    }
  }
  // Column 2q and 2q + 1: all 16 rows.
  for (int q = 0; q < 8; ++q) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * q * ds), _mm_unpacklo_epi64(b[q], b[8 + q]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (2 * q + 1) * ds), _mm_unpackhi_epi64(b[q], b[8 + q]));
  }
}

// Rows [r0, r1) of one matrix.
void TransposeRows(const uint8_t* src, int64_t rows, int64_t cols, int64_t r0, int64_t r1, uint8_t* dst) {
  int64_t r = r0;
  for (; r + kTile <= r1; r += kTile) {
    int64_t c = 0;
    for (; c + kTile <= cols; c += kTile) TransposeTile(src + r * cols + c, cols, dst + c * rows + r, rows);
    for (; c < cols; ++c) {
      for (int64_t i = r; i < r + kTile; ++i) dst[c * rows + i] = src[i * cols + c];
    }
  }
  for (; r < r1; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  }
}

}  // namespace

void TransposeBytes(const ThreadPool& pool, const uint8_t* src, int64_t matrices, int64_t rows, int64_t cols,
                    uint8_t* dst) {
  if (matrices <= 0 || rows <= 0 || cols <= 0) return;
  const int64_t bands = (rows + kTile - 1) / kTile, size = rows * cols;
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t m = task / bands, r0 = task % bands * kTile;
      TransposeRows(src + m * size, rows, cols, r0, std::min(rows, r0 + kTile), dst + m * size);
    }
  };
  const int64_t tasks = matrices * bands;
  if (matrices * size < kMinParallelBytes || pool.num_threads() < 2) {
    run(0, tasks);
  } else {
    // Chunks of at least kMinParallelBytes / 2 bytes.
    pool.ParallelFor(tasks, std::max<int64_t>(1, kMinParallelBytes / 2 / (kTile * cols)), run);
  }
}

}  // namespace qfuse::runtime::kernels::quant
