#include "runtime/kernels/linalg/implicit_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/kernels/linalg/avx512_sgemm.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

// 2-D (or 1-D) convolution with unit stride, computed without an im2col matrix:
// output rows [r0, r1) of one (image, group). The input rows they read are copied into
// a zero-padded buffer `padded` of width wp = wo + (kw - 1) * dilation; every im2col
// row (c, kh, kw) is then that buffer shifted by c * plane + kh * dh * wp + kw * dw,
// which the row-table GEMM reads in place, producing wp-wide output rows in `tmp` whose
// last wp - wo columns are discarded when copying out (with the bias).
#define QFUSE_AVX512_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))

// Lanes [0, n) of a 16-lane mask (n clamped to [0, 16]).
inline __mmask16 LowLanes(int64_t n) {
  return static_cast<__mmask16>(n <= 0 ? 0u : (n >= 16 ? 0xFFFFu : (1u << n) - 1u));
}

QFUSE_AVX512_TARGET void ImplicitConvRows(const ConvGeometry& g, int64_t cin_g, int64_t cout_g, const float* image,
                                          const float* w, const float* bias, int64_t r0, int64_t r1, float* out,
                                          std::vector<float>& padded, std::vector<int64_t>& offsets,
                                          std::vector<float>& tmp) {
  const int64_t h = g.image[1], wi = g.image[2], wo = g.col[2];
  const int64_t kh = g.kernel[1], kw = g.kernel[2], dh = g.dilation[1], dw = g.dilation[2];
  const int64_t wp = wo + (kw - 1) * dw;
  const int64_t rows = r1 - r0, hl = rows + (kh - 1) * dh;
  const int64_t plane = hl * wp;
  const int64_t pad_top = g.pad_begin[1], pad_left = g.pad_begin[2];
  padded.resize(cin_g * plane + (kw - 1) * dw + 1);
  // Columns px of the padded row map to input x = px - pad_left, valid in [x_lo, x_hi).
  const int64_t x_lo = std::min(wp, std::max<int64_t>(0, pad_left));
  const int64_t x_hi = std::max(x_lo, std::min(wp, wi + pad_left));
  for (int64_t c = 0; c < cin_g; ++c) {
    const float* chan = image + c * h * wi;
    for (int64_t py = 0; py < hl; ++py) {
      float* dst = padded.data() + c * plane + py * wp;
      const int64_t iy = r0 + py - pad_top;
      if (iy < 0 || iy >= h) {
        std::fill(dst, dst + wp, 0.0f);
        continue;
      }
      // dst[px] = src[px - pad_left] in [x_lo, x_hi), 0 elsewhere; masked-off lanes are not read.
      const uintptr_t src = reinterpret_cast<uintptr_t>(chan + iy * wi);
      for (int64_t px = 0; px < wp; px += 16) {
        const __mmask16 load = LowLanes(x_hi - px) & static_cast<__mmask16>(~LowLanes(x_lo - px));
        const __m512 v = _mm512_maskz_loadu_ps(
            load, reinterpret_cast<const float*>(src + sizeof(float) * (px - pad_left)));
        _mm512_mask_storeu_ps(dst + px, LowLanes(wp - px), v);
      }
    }
  }
  std::fill(padded.begin() + cin_g * plane, padded.end(), 0.0f);
  offsets.resize(cin_g * kh * kw);
  int64_t* off = offsets.data();
  for (int64_t c = 0; c < cin_g; ++c) {
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) *off++ = c * plane + i * dh * wp + j * dw;
    }
  }
  const int64_t n = rows * wp;
  tmp.resize(cout_g * n);
  Avx512SgemmRowTable(cout_g, n, cin_g * kh * kw, w, cin_g * kh * kw, padded.data(), offsets.data(),
                              tmp.data(), n);
  const int64_t out_size = g.col_size();
  for (int64_t oc = 0; oc < cout_g; ++oc) {
    const __m512 b = _mm512_set1_ps(bias ? bias[oc] : 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = tmp.data() + oc * n + r * wp;
      float* dst = out + oc * out_size + (r0 + r) * wo;
      for (int64_t x = 0; x < wo; x += 16) {
        const __mmask16 mask = LowLanes(wo - x);
        _mm512_mask_storeu_ps(dst + x, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, src + x), b));
      }
    }
  }
}

}  // namespace

void RunImplicitGemmConv(const ConvPlan& plan, const ThreadPool& pool, const ConvBuffers& b) {
  const ConvGeometry& g = plan.geometry;
  const int64_t cin = plan.in_channels, cout = plan.out_channels, group = plan.group;
  const int64_t cin_g = cin / group, cout_g = cout / group, k = cin_g * g.kernel_size();
  const int64_t in_size = g.image_size(), out_size = g.col_size();
  const int64_t items = b.batch * group, out_rows = g.col[0] * g.col[1];
  const int threads = pool.num_threads();
  const int64_t wp = g.col[2] + (g.kernel[2] - 1) * g.dilation[2];
  int64_t rows = std::max<int64_t>(1, kColBlockFloats / ((cin_g + cout_g) * wp));
  if (items < threads) rows = std::min(rows, (out_rows + threads - 1) / threads);  // split images across the pool
  rows = std::min(rows, out_rows);
  const int64_t row_blocks = (out_rows + rows - 1) / rows;
  pool.ParallelFor(items * row_blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded, tmp;
    std::vector<int64_t> offsets;
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t item = unit / row_blocks, block = unit % row_blocks;
      const int64_t n = item / group, gi = item % group;
      const int64_t r0 = block * rows, r1 = std::min(out_rows, r0 + rows);
      ImplicitConvRows(g, cin_g, cout_g, b.x + (n * cin + gi * cin_g) * in_size, b.w + gi * cout_g * k,
                       b.bias ? b.bias + gi * cout_g : nullptr, r0, r1, b.y + (n * cout + gi * cout_g) * out_size,
                       padded, offsets, tmp);
    }
  });
}

}  // namespace qfuse::runtime::kernels::linalg
