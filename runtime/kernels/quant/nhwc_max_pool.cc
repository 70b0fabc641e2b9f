#include "runtime/kernels/quant/nhwc_max_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::kernels::quant {
namespace {

// The window of output coordinate o along one axis: input rows [*begin, *end).
void WindowRange(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t size, int64_t* begin, int64_t* end) {
  const int64_t start = o * stride - pad;
  *begin = std::max<int64_t>(start, 0);
  *end = std::min<int64_t>(start + k, size);
}

// out[c] = max over taps of tap[t][c], for c in [c0, c): 64 channels per step.
template <bool kSigned>
__attribute__((target("avx512f,avx512bw"))) int64_t MaxRowsAvx512(const uint8_t* const* tap, int64_t taps, int64_t c,
                                                                  uint8_t* out) {
  int64_t j = 0;
  for (; j + 64 <= c; j += 64) {
    __m512i m = _mm512_loadu_si512(tap[0] + j);
    for (int64_t t = 1; t < taps; ++t) {
      const __m512i v = _mm512_loadu_si512(tap[t] + j);
      m = kSigned ? _mm512_max_epi8(m, v) : _mm512_max_epu8(m, v);
    }
    _mm512_storeu_si512(out + j, m);
  }
  return j;
}

template <bool kSigned>
__attribute__((target("avx2"))) int64_t MaxRowsAvx2(const uint8_t* const* tap, int64_t taps, int64_t c, int64_t j,
                                                    uint8_t* out) {
  for (; j + 32 <= c; j += 32) {
    __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tap[0] + j));
    for (int64_t t = 1; t < taps; ++t) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tap[t] + j));
      m = kSigned ? _mm256_max_epi8(m, v) : _mm256_max_epu8(m, v);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), m);
  }
  return j;
}

template <bool kSigned>
void MaxRowsScalar(const uint8_t* const* tap, int64_t taps, int64_t c, int64_t j, uint8_t* out) {
  using T = std::conditional_t<kSigned, int8_t, uint8_t>;
  for (; j < c; ++j) {
    T m = static_cast<T>(tap[0][j]);
    for (int64_t t = 1; t < taps; ++t) m = std::max(m, static_cast<T>(tap[t][j]));
    out[j] = static_cast<uint8_t>(m);
  }
}

template <bool kSigned>
void PoolRows(const NhwcMaxPoolShape& s, const uint8_t* x, uint8_t* y, int64_t row0, int64_t row1) {
  const bool avx512 = IsaAllowed(Isa::kAvx512), avx2 = IsaAllowed(Isa::kAvx2);
  thread_local std::vector<const uint8_t*> tap;  // reused: no allocation per call
  tap.resize(static_cast<size_t>(s.kh * s.kw));
  for (int64_t row = row0; row < row1; ++row) {  // row = n * oh + oy
    const int64_t n = row / s.oh, oy = row % s.oh;
    int64_t y0, y1;
    WindowRange(oy, s.sh, s.pad_top, s.kh, s.h, &y0, &y1);
    for (int64_t ox = 0; ox < s.ow; ++ox) {
      int64_t x0, x1;
      WindowRange(ox, s.sw, s.pad_left, s.kw, s.w, &x0, &x1);
      int64_t taps = 0;
      for (int64_t iy = y0; iy < y1; ++iy) {
        for (int64_t ix = x0; ix < x1; ++ix) tap[taps++] = x + ((n * s.h + iy) * s.w + ix) * s.c;
      }
      uint8_t* out = y + (row * s.ow + ox) * s.c;
      int64_t j = avx512 ? MaxRowsAvx512<kSigned>(tap.data(), taps, s.c, out) : 0;
      if (avx2) j = MaxRowsAvx2<kSigned>(tap.data(), taps, s.c, j, out);
      MaxRowsScalar<kSigned>(tap.data(), taps, s.c, j, out);
    }
  }
}

}  // namespace

bool EveryWindowTouchesTheImage(const NhwcMaxPoolShape& s) {
  if (s.n <= 0 || s.h <= 0 || s.w <= 0 || s.c <= 0 || s.kh <= 0 || s.kw <= 0 || s.sh <= 0 || s.sw <= 0 || s.oh <= 0 ||
      s.ow <= 0 || s.pad_top < 0 || s.pad_left < 0) {
    return false;
  }
  // The first window starts at -pad and the last at (o - 1) * stride - pad: both must overlap
  // [0, size), and the windows in between do when these two do.
  const auto axis = [](int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t size) {
    return -pad + k > 0 && (o - 1) * stride - pad < size;
  };
  return axis(s.oh, s.sh, s.pad_top, s.kh, s.h) && axis(s.ow, s.sw, s.pad_left, s.kw, s.w);
}

absl::Status NhwcMaxPool(const NhwcMaxPoolShape& s, bool is_signed, const uint8_t* x, uint8_t* y,
                         const ThreadPool* pool) {
  if (!EveryWindowTouchesTheImage(s)) {
    return absl::InvalidArgumentError("MaxPool: a window lies outside the image, or a size is not positive");
  }
  const auto rows = [&](int64_t begin, int64_t end) {
    is_signed ? PoolRows<true>(s, x, y, begin, end) : PoolRows<false>(s, x, y, begin, end);
  };
  const int64_t rows_total = s.n * s.oh;
  if (pool == nullptr) {
    rows(0, rows_total);
  } else {
    pool->ParallelFor(rows_total, 1, rows);
  }
  return absl::OkStatus();
}

}  // namespace qfuse::runtime::kernels::quant
