#include "runtime/kernels/linalg/im2col.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

// Lanes [0, n) of a 16-lane mask (n clamped to [0, 16]).
__attribute__((always_inline)) inline uint32_t LowLanes(int64_t n) {
  return n <= 0 ? 0u : (n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

// dst[x] = src[x + off] for x in [lo, hi), 0 elsewhere in [0, width): whole rows in
// a few masked 16-lane moves (masked-off lanes are never read, so no out-of-row access).
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma"))) inline void CopyRowAvx512(
    float* dst, const float* src, int64_t off, int64_t lo, int64_t hi, int64_t width) {
  for (int64_t x = 0; x < width; x += 16) {
    const __mmask16 load = static_cast<__mmask16>(LowLanes(hi - x) & ~LowLanes(lo - x));
    const __m512 v = _mm512_maskz_loadu_ps(load, reinterpret_cast<const float*>(
                                                     reinterpret_cast<uintptr_t>(src) + sizeof(float) * (x + off)));
    _mm512_mask_storeu_ps(dst + x, static_cast<__mmask16>(LowLanes(width - x)), v);
  }
}

// The Im2Col loop, inlined into a baseline and an AVX-512 variant (masked row copies
// instead of short memcpy/memset calls for unit horizontal stride).
template <bool kAvx512>
__attribute__((always_inline)) inline void Im2ColBody(const ConvGeometry& g, int64_t channels, const float* image,
                                                      int64_t row_begin, int64_t row_end, float* col) {
  const int64_t col_size = (row_end - row_begin) * g.col[2];
  const int64_t plane = g.image[1] * g.image[2];
  float* dst_row = col;
  for (int64_t c = 0; c < channels; ++c) {
    const float* chan = image + c * g.image_size();
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, dst_row += col_size) {
          const int64_t off_w = kw * g.dilation[2] - g.pad_begin[2];
          int64_t lo, hi;
          ValidRange(off_w, g.stride[2], g.image[2], g.col[2], &lo, &hi);
          float* dst = dst_row;
          for (int64_t row = row_begin; row < row_end; ++row, dst += g.col[2]) {
            const int64_t z = row / g.col[1], y = row % g.col[1];
            const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
            const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
            if (iz < 0 || iz >= g.image[0] || iy < 0 || iy >= g.image[1]) {
              std::memset(dst, 0, sizeof(float) * g.col[2]);
              continue;
            }
            const float* src = chan + iz * plane + iy * g.image[2];
            if constexpr (kAvx512) {
              if (g.stride[2] == 1) {
                CopyRowAvx512(dst, src, off_w, lo, hi, g.col[2]);
                continue;
              }
            }
            if (lo > 0) std::memset(dst, 0, sizeof(float) * lo);
            if (g.stride[2] == 1) {
              std::memcpy(dst + lo, src + lo + off_w, sizeof(float) * (hi - lo));
            } else {
              const int64_t s = g.stride[2];
              for (int64_t x = lo; x < hi; ++x) dst[x] = src[x * s + off_w];
            }
            if (hi < g.col[2]) std::memset(dst + hi, 0, sizeof(float) * (g.col[2] - hi));
          }
        }
      }
    }
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma"))) void Im2ColAvx512(const ConvGeometry& g,
                                                                                   int64_t channels,
                                                                                   const float* image,
                                                                                   int64_t row_begin,
                                                                                   int64_t row_end, float* col) {
  Im2ColBody<true>(g, channels, image, row_begin, row_end, col);
}

void Im2ColBaseline(const ConvGeometry& g, int64_t channels, const float* image, int64_t row_begin,
                    int64_t row_end, float* col) {
  Im2ColBody<false>(g, channels, image, row_begin, row_end, col);
}

}  // namespace

void Im2ColRows(const ConvGeometry& g, int64_t channels, const float* image, int64_t row_begin, int64_t row_end,
                float* col) {
  if (IsaAllowed(Isa::kAvx512)) {
    Im2ColAvx512(g, channels, image, row_begin, row_end, col);
  } else {
    Im2ColBaseline(g, channels, image, row_begin, row_end, col);
  }
}

void Im2Col(const ConvGeometry& g, int64_t channels, const float* image, float* col) {
  Im2ColRows(g, channels, image, 0, g.col[0] * g.col[1], col);
}

void Col2ImAdd(const ConvGeometry& g, int64_t channels, const float* col, float* image) {
  const int64_t col_size = g.col_size();
  const int64_t plane = g.image[1] * g.image[2];
  const float* src_row = col;
  for (int64_t c = 0; c < channels; ++c) {
    float* chan = image + c * g.image_size();
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, src_row += col_size) {
          const int64_t off_w = kw * g.dilation[2] - g.pad_begin[2];
          int64_t lo, hi;
          ValidRange(off_w, g.stride[2], g.image[2], g.col[2], &lo, &hi);
          const float* src = src_row;
          for (int64_t z = 0; z < g.col[0]; ++z) {
            const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
            const bool z_ok = iz >= 0 && iz < g.image[0];
            for (int64_t y = 0; y < g.col[1]; ++y, src += g.col[2]) {
              const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
              if (!z_ok || iy < 0 || iy >= g.image[1]) continue;
              float* dst = chan + iz * plane + iy * g.image[2];
              const int64_t s = g.stride[2];
              for (int64_t x = lo; x < hi; ++x) dst[x * s + off_w] += src[x];
            }
          }
        }
      }
    }
  }
}

}  // namespace qfuse::runtime::kernels::linalg
