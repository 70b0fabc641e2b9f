#include "runtime/kernels/linalg/depthwise.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

// The image rows output row (z, y) of a depthwise convolution reads, with the weight taps
// for each; rows outside the image (padding) are skipped. Returns how many were written.
inline int64_t DepthwiseRows(const ConvGeometry& g, int64_t z, int64_t y, const float* image, int64_t plane,
                             int64_t width, const float* w, int64_t kw_count, const float** rows,
                             const float** row_taps) {
  int64_t num_rows = 0;
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
    if (iz < 0 || iz >= g.image[0]) continue;
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
      if (iy < 0 || iy >= g.image[1]) continue;
      rows[num_rows] = image + iz * plane + iy * width;
      row_taps[num_rows++] = w + (kd * g.kernel[1] + kh) * kw_count;
    }
  }
  return num_rows;
}

// dst[x:x+kBlock] = bias + sum over rows and taps of w * row[x + off]: fixed-size
// inner loops the compiler turns into vector FMAs held in registers across all taps.
// Stores (never adds), so overlapping blocks are harmless.
template <int kBlock>
__attribute__((always_inline)) inline void DepthwiseBlock(const float* const* rows, const float* const* row_taps,
                                                          int64_t num_rows, const int64_t* off, int64_t kw_count,
                                                          int64_t x, float bias, float* dst) {
  // Two partial sums (alternate taps) halve the FMA dependency chains.
  float acc[kBlock], acc2[kBlock];
  for (int j = 0; j < kBlock; ++j) {
    acc[j] = bias;
    acc2[j] = 0.0f;
  }
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* taps = row_taps[r];
    const float* row = rows[r] + x;
    int64_t kw = 0;
    for (; kw + 2 <= kw_count; kw += 2) {
      const float w0 = taps[kw], w1 = taps[kw + 1];
      const float* s0 = row + off[kw];
      const float* s1 = row + off[kw + 1];
      for (int j = 0; j < kBlock; ++j) {
        acc[j] += w0 * s0[j];
        acc2[j] += w1 * s1[j];
      }
    }
    if (kw < kw_count) {
      const float w0 = taps[kw];
      const float* s0 = row + off[kw];
      for (int j = 0; j < kBlock; ++j) acc2[j] += w0 * s0[j];
    }
  }
  for (int j = 0; j < kBlock; ++j) dst[x + j] = acc[j] + acc2[j];
}

// The depthwise loop body, inlined into a baseline and an AVX2/FMA variant.
__attribute__((always_inline)) inline void DepthwiseBody(const ConvGeometry& g, const float* image, const float* w,
                                                         float bias, float* out) {
  const int64_t plane = g.image[1] * g.image[2];
  const int64_t s = g.stride[2];
  const int64_t kw_count = g.kernel[2];
  const int64_t width = g.image[2];
  // Per horizontal tap: image offset and valid output range (divisions hoisted).
  std::vector<int64_t> lo(kw_count), hi(kw_count), off(kw_count);
  int64_t inner_lo = 0, inner_hi = g.col[2];  // outputs where every tap is inside the image
  for (int64_t kw = 0; kw < kw_count; ++kw) {
    off[kw] = kw * g.dilation[2] - g.pad_begin[2];
    ValidRange(off[kw], s, width, g.col[2], &lo[kw], &hi[kw]);
    inner_lo = std::max(inner_lo, lo[kw]);
    inner_hi = std::min(inner_hi, hi[kw]);
  }
  inner_hi = std::max(inner_hi, inner_lo);
  std::vector<const float*> rows(g.kernel[0] * g.kernel[1]), row_taps(rows.size());
  float* dst = out;
  for (int64_t z = 0; z < g.col[0]; ++z) {
    for (int64_t y = 0; y < g.col[1]; ++y, dst += g.col[2]) {
      std::fill(dst, dst + g.col[2], bias);
      // The image rows (and their taps) this output row reads.
      const int64_t num_rows =
          DepthwiseRows(g, z, y, image, plane, width, w, kw_count, rows.data(), row_taps.data());
      if (s == 1) {
        int64_t x = inner_lo;
        for (; x + 16 <= inner_hi; x += 16) {
          DepthwiseBlock<16>(rows.data(), row_taps.data(), num_rows, off.data(), kw_count, x, bias, dst);
        }
        for (; x + 8 <= inner_hi; x += 8) {
          DepthwiseBlock<8>(rows.data(), row_taps.data(), num_rows, off.data(), kw_count, x, bias, dst);
        }
        if (x < inner_hi && inner_hi - inner_lo >= 8) {  // last block overlaps the previous one
          DepthwiseBlock<8>(rows.data(), row_taps.data(), num_rows, off.data(), kw_count, inner_hi - 8, bias, dst);
          x = inner_hi;
        }
        for (; x < inner_hi; ++x) {
          DepthwiseBlock<1>(rows.data(), row_taps.data(), num_rows, off.data(), kw_count, x, bias, dst);
        }
        // Borders: taps that fall into the padding are skipped.
        for (int64_t r = 0; r < num_rows; ++r) {
          for (int64_t kw = 0; kw < kw_count; ++kw) {
            const float wv = row_taps[r][kw];
            const float* src = rows[r] + off[kw];
            for (int64_t xb = lo[kw]; xb < std::min(hi[kw], inner_lo); ++xb) dst[xb] += wv * src[xb];
            for (int64_t xb = std::max(lo[kw], inner_hi); xb < hi[kw]; ++xb) dst[xb] += wv * src[xb];
          }
        }
        continue;
      }
      for (int64_t r = 0; r < num_rows; ++r) {
        for (int64_t kw = 0; kw < kw_count; ++kw) {
          const float wv = row_taps[r][kw];
          const float* src = rows[r] + off[kw];
          for (int64_t x = lo[kw]; x < hi[kw]; ++x) dst[x] += wv * src[x * s];
        }
      }
    }
  }
}

__attribute__((target("avx2,fma"))) void DepthwiseAvx2(const ConvGeometry& g, const float* image, const float* w,
                                                       float bias, float* out) {
  DepthwiseBody(g, image, w, bias, out);
}

void DepthwiseBaseline(const ConvGeometry& g, const float* image, const float* w, float bias, float* out) {
  DepthwiseBody(g, image, w, bias, out);
}

// The AVX-512 depthwise loop: each output row in blocks of 16 lanes with one ZMM
// accumulator pair held across all taps; a tap's lanes that fall into the padding are
// masked off (neither read nor accumulated), which covers the borders without a
// scalar loop. Strided convs gather. Kernels wider than kMaxTaps taps per row, with more
// than kMaxRows rows, or output rows longer than kMaxBlocks blocks use DepthwiseBody.
constexpr int64_t kMaxTaps = 16, kMaxRows = 64, kMaxBlocks = 32;

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma"))) void DepthwiseAvx512(const ConvGeometry& g,
                                                                                      const float* image,
                                                                                      const float* w, float bias,
                                                                                      float* out) {
  const int64_t kw_count = g.kernel[2];
  const int64_t width_out = g.col[2];
  const int64_t blocks = (width_out + 15) / 16;
  if (kw_count > kMaxTaps || g.kernel[0] * g.kernel[1] > kMaxRows || blocks > kMaxBlocks) {
    DepthwiseBody(g, image, w, bias, out);
    return;
  }
  const int64_t plane = g.image[1] * g.image[2];
  const int64_t s = g.stride[2];
  const int64_t width = g.image[2];
  int64_t off[kMaxTaps];
  // tap_mask[b][kw]: lanes of block b whose input column for tap kw is inside the image.
  __mmask16 tap_mask[kMaxBlocks][kMaxTaps];
  __mmask16 store_mask[kMaxBlocks];
  const auto lanes = [](int64_t n) -> uint32_t { return n <= 0 ? 0u : (n >= 16 ? 0xFFFFu : (1u << n) - 1u); };
  for (int64_t b = 0; b < blocks; ++b) store_mask[b] = static_cast<__mmask16>(lanes(width_out - b * 16));
  for (int64_t kw = 0; kw < kw_count; ++kw) {
    off[kw] = kw * g.dilation[2] - g.pad_begin[2];
    int64_t lo, hi;
    ValidRange(off[kw], s, width, width_out, &lo, &hi);
    for (int64_t b = 0; b < blocks; ++b) {
      tap_mask[b][kw] = static_cast<__mmask16>(lanes(hi - b * 16) & ~lanes(lo - b * 16));
    }
  }
  const __m512i lane_index = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(static_cast<int>(s)));
  const float* rows[kMaxRows];
  const float* row_taps[kMaxRows];
  float* dst = out;
  for (int64_t z = 0; z < g.col[0]; ++z) {
    for (int64_t y = 0; y < g.col[1]; ++y, dst += width_out) {
      const int64_t num_rows =
          DepthwiseRows(g, z, y, image, plane, width, w, kw_count, rows, row_taps);
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t x = b * 16;
        const __mmask16* masks = tap_mask[b];
        __m512 acc = _mm512_set1_ps(bias), acc2 = _mm512_setzero_ps();
        for (int64_t r = 0; r < num_rows; ++r) {
          const float* taps = row_taps[r];
          // Addresses of masked-off lanes may lie outside the row; they are not accessed.
          const uintptr_t row = reinterpret_cast<uintptr_t>(rows[r]);
          for (int64_t kw = 0; kw < kw_count; ++kw) {
            const float* src = reinterpret_cast<const float*>(row + sizeof(float) * (x * s + off[kw]));
            const __m512 v = s == 1 ? _mm512_maskz_loadu_ps(masks[kw], src)
                                    : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), masks[kw], lane_index, src, 4);
            // Padding lanes keep their sum (no w * 0 term, as in the scalar loop).
            if (kw & 1) {
              acc2 = _mm512_mask3_fmadd_ps(_mm512_set1_ps(taps[kw]), v, acc2, masks[kw]);
            } else {
              acc = _mm512_mask3_fmadd_ps(_mm512_set1_ps(taps[kw]), v, acc, masks[kw]);
            }
          }
        }
        _mm512_mask_storeu_ps(dst + x, store_mask[b], _mm512_add_ps(acc, acc2));
      }
    }
  }
}

}  // namespace

void DepthwiseChannel(const ConvGeometry& g, const float* image, const float* w, float bias, float* out) {
  if (IsaAllowed(Isa::kAvx512)) {
    DepthwiseAvx512(g, image, w, bias, out);
  } else if (IsaAllowed(Isa::kAvx2)) {
    DepthwiseAvx2(g, image, w, bias, out);
  } else {
    DepthwiseBaseline(g, image, w, bias, out);
  }
}

void RunDepthwiseConv(const ConvPlan& plan, const ThreadPool& pool, const ConvBuffers& b) {
  const ConvGeometry& g = plan.geometry;
  const int64_t cin = plan.in_channels, cout = plan.out_channels, mult = cout / cin;
  const int64_t in_size = g.image_size(), out_size = g.col_size(), taps = g.kernel_size();
  pool.ParallelFor(b.batch * cout, 4, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / cout, oc = item % cout;
      DepthwiseChannel(g, b.x + (n * cin + oc / mult) * in_size, b.w + oc * taps, b.bias ? b.bias[oc] : 0.0f,
                       b.y + item * out_size);
    }
  });
}

}  // namespace qfuse::runtime::kernels::linalg
