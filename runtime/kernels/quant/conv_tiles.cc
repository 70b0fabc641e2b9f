#include "runtime/kernels/quant/conv_tiles.h"

#include <algorithm>
#include <cstring>

namespace qfuse::runtime::kernels::quant {
namespace {

using linalg::ConvGeometry;

// rows[r][c * taps + tap] = image[c][position of output pixel p0 + r and tap], or `pad`
// outside the image; rows are `k` bytes apart (byte copies: int8 and uint8 alike).
void Im2Rows(const ConvGeometry& g, int64_t channels, const uint8_t* image, uint8_t pad, int64_t p0, int64_t p1,
             uint8_t* rows, int64_t k) {
  const int64_t taps = g.kernel_size();
  const int64_t image_size = g.image_size();
  for (int64_t p = p0; p < p1; ++p, rows += k) {
    const int64_t o2 = p % g.col[2], o1 = (p / g.col[2]) % g.col[1], o0 = p / (g.col[2] * g.col[1]);
    for (int64_t t0 = 0; t0 < g.kernel[0]; ++t0) {
      const int64_t i0 = o0 * g.stride[0] - g.pad_begin[0] + t0 * g.dilation[0];
      const bool in0 = i0 >= 0 && i0 < g.image[0];
      for (int64_t t1 = 0; t1 < g.kernel[1]; ++t1) {
        const int64_t i1 = o1 * g.stride[1] - g.pad_begin[1] + t1 * g.dilation[1];
        const bool in1 = in0 && i1 >= 0 && i1 < g.image[1];
        for (int64_t t2 = 0; t2 < g.kernel[2]; ++t2) {
          const int64_t i2 = o2 * g.stride[2] - g.pad_begin[2] + t2 * g.dilation[2];
          const int64_t tap = (t0 * g.kernel[1] + t1) * g.kernel[2] + t2;
          if (in1 && i2 >= 0 && i2 < g.image[2]) {
            const uint8_t* src = image + (i0 * g.image[1] + i1) * g.image[2] + i2;
            for (int64_t c = 0; c < channels; ++c) rows[c * taps + tap] = src[c * image_size];
          } else {
            for (int64_t c = 0; c < channels; ++c) rows[c * taps + tap] = pad;
          }
        }
      }
    }
  }
}

// Im2Rows for 2-D geometries (image[0] == kernel[0] == 1), same bytes: pixels whose
// taps all lie inside the image (the interior) copy each channel's taps with
// precomputed offsets and no bounds tests; border pixels are filled with `pad` and then
// get their in-image taps. KH / KW > 0 fix the kernel size at compile time (0: any).
template <int KH, int KW>
void Im2Rows2d(const ConvGeometry& g, int64_t channels, const uint8_t* image, uint8_t pad, int64_t p0, int64_t p1,
               uint8_t* rows, int64_t k) {
  const int64_t kh = KH > 0 ? KH : g.kernel[1], kw = KW > 0 ? KW : g.kernel[2], taps = kh * kw;
  const int64_t ih = g.image[1], iw = g.image[2], image_size = g.image_size(), ow = g.col[2];
  const int64_t sh = g.stride[1], sw = g.stride[2], dh = g.dilation[1], dw = g.dilation[2];
  constexpr int kFixedTaps = KH > 0 && KW > 0 ? KH * KW : 1;
  int64_t fixed_offsets[kFixedTaps];
  thread_local std::vector<int64_t> any_offsets;
  int64_t* offsets = fixed_offsets;
  if (KH == 0 || KW == 0) {
    any_offsets.resize(taps);
    offsets = any_offsets.data();
  }
  for (int64_t t1 = 0; t1 < kh; ++t1) {
    for (int64_t t2 = 0; t2 < kw; ++t2) offsets[t1 * kw + t2] = t1 * dh * iw + t2 * dw;
  }
  const int64_t span_h = (kh - 1) * dh, span_w = (kw - 1) * dw;
  for (int64_t p = p0; p < p1; ++p, rows += k) {
    const int64_t o1 = p / ow, o2 = p % ow;
    const int64_t y0 = o1 * sh - g.pad_begin[1], x0 = o2 * sw - g.pad_begin[2];
    if (y0 >= 0 && y0 + span_h < ih && x0 >= 0 && x0 + span_w < iw) {
      const uint8_t* base = image + y0 * iw + x0;
      if (KH == 1 && KW == 1) {
        for (int64_t c = 0; c < channels; ++c) rows[c] = base[c * image_size];
      } else if (KH > 0 && KW > 0) {
        for (int64_t c = 0; c < channels; ++c) {
          const uint8_t* src = base + c * image_size;
          uint8_t* dst = rows + c * kFixedTaps;
          for (int t = 0; t < kFixedTaps; ++t) dst[t] = src[fixed_offsets[t]];
        }
      } else {
        for (int64_t c = 0; c < channels; ++c) {
          const uint8_t* src = base + c * image_size;
          uint8_t* dst = rows + c * taps;
          for (int64_t t = 0; t < taps; ++t) dst[t] = src[offsets[t]];
        }
      }
      continue;
    }
    std::memset(rows, pad, static_cast<size_t>(channels * taps));
    for (int64_t t1 = 0; t1 < kh; ++t1) {
      const int64_t i1 = y0 + t1 * dh;
      if (i1 < 0 || i1 >= ih) continue;
      for (int64_t t2 = 0; t2 < kw; ++t2) {
        const int64_t i2 = x0 + t2 * dw;
        if (i2 < 0 || i2 >= iw) continue;
        const int64_t tap = t1 * kw + t2;
        const uint8_t* src = image + i1 * iw + i2;
        for (int64_t c = 0; c < channels; ++c) rows[c * taps + tap] = src[c * image_size];
      }
    }
  }
}

void GatherRows(const ConvGeometry& g, int64_t channels, const uint8_t* image, uint8_t pad, int64_t p0, int64_t p1,
                uint8_t* rows, int64_t k) {
  if (g.image[0] != 1 || g.kernel[0] != 1 || g.col[0] != 1) {
    Im2Rows(g, channels, image, pad, p0, p1, rows, k);
  } else if (g.kernel[1] == 3 && g.kernel[2] == 3) {
    Im2Rows2d<3, 3>(g, channels, image, pad, p0, p1, rows, k);
  } else if (g.kernel[1] == 1 && g.kernel[2] == 1) {
    Im2Rows2d<1, 1>(g, channels, image, pad, p0, p1, rows, k);
  } else {
    Im2Rows2d<0, 0>(g, channels, image, pad, p0, p1, rows, k);
  }
}

}  // namespace

std::vector<PreparedWeights> PrepareConvGroups(const Tensor& w, int64_t group, absl::Span<const int32_t> w_zps) {
  const int64_t cout = w.dims()[0];
  const int64_t k = w.num_elements() / std::max<int64_t>(cout, 1);
  const int64_t cout_g = cout / group;
  std::vector<PreparedWeights> out;
  for (int64_t g = 0; g < group; ++g) {
    WeightsView v;
    v.tensor = &w;
    v.offset = g * cout_g * k;
    v.k = k;
    v.n = cout_g;
    v.stride_k = 1;
    v.stride_n = k;
    v.zero_points = w_zps.size() == 1 ? w_zps : w_zps.subspan(g * cout_g, cout_g);
    out.push_back(PrepareWeights(v));
  }
  return out;
}

void ForEachConvTile(const ConvTilesArgs& args, ConvTileFn tile) {
  const ConvGeometry& g = *args.geometry;
  const int64_t group = args.group, cin = args.cin, cin_g = cin / group;
  const int64_t k = cin_g * g.kernel_size();
  const int64_t pixels = g.col_size(), image_size = g.image_size();
  const int64_t tasks_per_item = (pixels + kConvTilePixels - 1) / kConvTilePixels;
  const uint8_t pad = static_cast<uint8_t>(args.x_zero_point);
  args.pool->ParallelFor(args.batch * group * tasks_per_item, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<uint8_t> rows;
    thread_local std::vector<int32_t> acc;
    const int64_t cout_g = args.weights[0].n;
    rows.resize(kConvTilePixels * std::max<int64_t>(k, 1));
    acc.resize(kConvTilePixels * cout_g);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t item = task / tasks_per_item, n = item / group, gi = item % group;
      const int64_t p0 = (task % tasks_per_item) * kConvTilePixels, p1 = std::min(pixels, p0 + kConvTilePixels);
      GatherRows(g, cin_g, args.x + (n * cin + gi * cin_g) * image_size, pad, p0, p1, rows.data(), k);
      Int8GemmArgs gemm;
      gemm.m = p1 - p0;
      gemm.a = rows.data();
      gemm.a_signed = args.x_signed;
      gemm.lda = k;
      gemm.a_zero_point = args.x_zero_point;
      gemm.c = acc.data();
      gemm.ldc = cout_g;
      IntegerGemm(gemm, args.weights[gi]);
      tile(n, gi, p0, p1, acc.data());
    }
  });
}

}  // namespace qfuse::runtime::kernels::quant
