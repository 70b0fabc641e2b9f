#include "runtime/onednn/source_split.h"

#include <immintrin.h>

#include <algorithm>

#include "base/grow_buffer.h"
#include "runtime/cpu_isa.h"

namespace qfuse::runtime::onednn {
namespace {

using Entry = SourceOutliers::Entry;

// Source pixels per parallel chunk of SplitSource.
constexpr int64_t kChunkPixels = 256;

inline uint32_t Pattern16(int32_t v) { return static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(v))); }

// lo and outliers of bytes [c0, n) of a run of pixels (`channel` the byte's index in the run).
void SplitScalar(const uint8_t* x, uint8_t flip, int32_t offset, int64_t c0, int64_t n, uint8_t* lo,
                 std::vector<Entry>* out) {
  for (int64_t c = c0; c < n; ++c) {
    const int32_t v = (x[c] ^ flip) - offset;
    const int32_t l = std::clamp(v, 0, 127);
    lo[c] = static_cast<uint8_t>(l);
    if (v != l) out->push_back({static_cast<int32_t>(c), Pattern16(v - l)});
  }
}

// The same, 32 bytes at a time; returns the bytes done.
__attribute__((target("avx2"))) int64_t SplitAvx2(const uint8_t* x, uint8_t flip, int32_t offset, int64_t n,
                                                  uint8_t* lo, std::vector<Entry>* out) {
  const __m256i vflip = _mm256_set1_epi8(static_cast<char>(flip));
  const __m256i voff = _mm256_set1_epi8(static_cast<char>(offset));
  const __m256i max_lo = _mm256_set1_epi8(127);
  int64_t c = 0;
  for (; c + 32 <= n; c += 32) {
    const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + c)), vflip);
    const __m256i l = _mm256_min_epu8(_mm256_subs_epu8(v, voff), max_lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + c), l);
    // x is outside the window exactly where o + lo differs from it.
    uint32_t outside = ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_add_epi8(l, voff), v)));
    while (outside != 0) {
      const int i = __builtin_ctz(outside);
      outside &= outside - 1;
      const int32_t value = (x[c + i] ^ flip) - offset;
      out->push_back({static_cast<int32_t>(c + i), Pattern16(value - std::clamp(value, 0, 127))});
    }
  }
  return c;
}

// acc[j] += w[j] * d for j < n, modulo 2^32 (d a 16-bit pattern zero-extended).
void AddScaledRowScalar(const int8_t* w, uint32_t d, int64_t n, int32_t* acc) {
  const int32_t dv = static_cast<int16_t>(d);
  for (int64_t j = 0; j < n; ++j) {
    acc[j] = static_cast<int32_t>(static_cast<uint32_t>(acc[j]) + static_cast<uint32_t>(w[j] * dv));
  }
}

// The same, 8 at a time: w sign-extended to int32 lanes, whose low halves are w as int16, so
// vpmaddwd with d's lanes (high halves 0) gives w * d + hi(w) * 0.
__attribute__((target("avx2"))) void AddScaledRowAvx2(const int8_t* w, uint32_t d, int64_t n, int32_t* acc) {
  const __m256i vd = _mm256_set1_epi32(static_cast<int>(d));
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i wv = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + j)));
    const __m256i prod = _mm256_madd_epi16(wv, vd);
    __m256i* a = reinterpret_cast<__m256i*>(acc + j);
    _mm256_storeu_si256(a, _mm256_add_epi32(_mm256_loadu_si256(a), prod));
  }
  AddScaledRowScalar(w + j, d, n - j, acc + j);
}

// *o = t / s when t >= 0 is a multiple of s; strides 1 and 2 without a division.
inline bool ExactQuotient(int64_t t, int64_t s, int64_t* o) {
  if (t < 0) return false;
  if (s == 1) {
    *o = t;
    return true;
  }
  if (s == 2) {
    *o = t >> 1;
    return (t & 1) == 0;
  }
  *o = t / s;
  return t % s == 0;
}

}  // namespace

int32_t SplitSourceOffset(int32_t zero_point) { return std::clamp(zero_point - 64, 0, 128); }

SplitSourceWeights PrepareSplitSourceWeights(const ir::Tensor& weights, int64_t group) {
  SplitSourceWeights out;
  out.cout = weights.dims()[0];
  out.cin_g = weights.dims()[1];
  out.cin = out.cin_g * group;
  out.cout_g = out.cout / group;
  out.taps = weights.dims()[2] * weights.dims()[3];
  out.w.resize(static_cast<size_t>(out.taps * out.cin * out.cout_g));
  const auto* w = static_cast<const int8_t*>(weights.raw_data());
  for (int64_t oc = 0; oc < out.cout; ++oc) {
    const int64_t g = oc / out.cout_g, j = oc % out.cout_g;
    for (int64_t ic = 0; ic < out.cin_g; ++ic) {
      for (int64_t t = 0; t < out.taps; ++t) {
        const int64_t c = g * out.cin_g + ic;
        out.w[(t * out.cin + c) * out.cout_g + j] = w[(oc * out.cin_g + ic) * out.taps + t];
      }
    }
  }
  return out;
}

bool DenseSplitOutliers(const uint8_t* x, int64_t bytes, uint8_t flip, int32_t offset) {
  constexpr int64_t kMaxOutlierShareInverse = 8, kProbeStride = 16384, kProbeRun = 64;
  int64_t seen = 0, outside = 0;
  for (int64_t i = 0; i < bytes; i += kProbeStride) {
    const int64_t end = std::min(bytes, i + kProbeRun);
    for (int64_t j = i; j < end; ++j) {
      const int32_t v = (x[j] ^ flip) - offset;
      outside += v < 0 || v > 127;
    }
    seen += end - i;
  }
  return outside * kMaxOutlierShareInverse > seen;
}

void SplitSource(const uint8_t* x, uint8_t flip, int32_t offset, int64_t pixels, int64_t channels, uint8_t* lo,
                 SourceOutliers* outliers) {
  SourceOutliers& out = *outliers;
  const int64_t chunks = (pixels + kChunkPixels - 1) / kChunkPixels;
  // Reused: clearing keeps every vector's storage.
  GrowTo(out.chunks, chunks);
  GrowTo(out.chunk_pixels, chunks);
  out.pixels.clear();
  out.total = 0;
  const bool avx2 = IsaAllowed(Isa::kAvx2);
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    // The chunk's pixels are one run of bytes: split it whole, then number the entries by
    // pixel and channel.
    std::vector<Entry>& entries = out.chunks[chunk];
    entries.clear();
    const int64_t q0 = chunk * kChunkPixels, q1 = std::min(pixels, q0 + kChunkPixels);
    const int64_t bytes = (q1 - q0) * channels;
    const uint8_t* xq = x + q0 * channels;
    uint8_t* lq = lo + q0 * channels;
    const int64_t done = avx2 ? SplitAvx2(xq, flip, offset, bytes, lq, &entries) : 0;
    SplitScalar(xq, flip, offset, done, bytes, lq, &entries);
    std::vector<SourceOutliers::Pixel>& list = out.chunk_pixels[chunk];
    list.clear();
    for (size_t i = 0; i < entries.size(); ++i) {
      const int64_t q = q0 + entries[i].channel / channels;
      if (list.empty() || list.back().pixel != q) {
        list.push_back({q, static_cast<int32_t>(chunk), static_cast<int32_t>(i), 0});
      }
      ++list.back().count;
      entries[i].channel %= channels;
    }
  }
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    out.total += static_cast<int64_t>(out.chunks[chunk].size());
    out.pixels.insert(out.pixels.end(), out.chunk_pixels[chunk].begin(), out.chunk_pixels[chunk].end());
  }
}

void AddSourceOutliers(const kernels::linalg::ConvGeometry& g, const SourceOutliers& outliers,
                       const SplitSourceWeights& w, int64_t p0, int64_t p1, int32_t* acc) {
  if (outliers.pixels.empty() || p1 <= p0) return;
  const bool avx2 = IsaAllowed(Isa::kAvx2);
  const int64_t oh = g.col[1], ow = g.col[2], out_plane = oh * ow;
  const int64_t ih = g.image[1], iw = g.image[2], in_plane = ih * iw;
  const int64_t sy = g.stride[1], sx = g.stride[2], dy = g.dilation[1], dx = g.dilation[2];
  const int64_t py = g.pad_begin[1], px = g.pad_begin[2];
  // The source rows that reach output rows [first row of p0, last row of p1 - 1]: from
  // image n0's row oy0 * sy - py to image n1's row oy1 * sy - py + (KH - 1) * dy.
  const int64_t n0 = p0 / out_plane, oy0 = (p0 % out_plane) / ow;
  const int64_t n1 = (p1 - 1) / out_plane, oy1 = ((p1 - 1) % out_plane) / ow;
  const int64_t iy0 = std::clamp<int64_t>(oy0 * sy - py, 0, ih);
  const int64_t iy1 = std::clamp<int64_t>(oy1 * sy - py + (g.kernel[1] - 1) * dy + 1, 0, ih);
  // A pointwise conv reads source pixel p for output pixel p alone: no more than [p0, p1)
  // (the rows would admit a whole band of one row).
  const bool pointwise = g.IsPointwise();
  const int64_t q0 = pointwise ? p0 : n0 * in_plane + iy0 * iw, q1 = pointwise ? p1 : n1 * in_plane + iy1 * iw;
  auto it = std::lower_bound(outliers.pixels.begin(), outliers.pixels.end(), q0,
                             [](const SourceOutliers::Pixel& a, int64_t q) { return a.pixel < q; });
  // Each outlier pixel scatters into the outputs of [p0, p1) whose taps read it.
  for (; it != outliers.pixels.end() && it->pixel < q1; ++it) {
    const int64_t q = it->pixel, n = q / in_plane, iy = (q % in_plane) / iw, ix = q % iw;
    const Entry* e = outliers.chunks[it->chunk].data() + it->begin;
    for (int64_t ky = 0; ky < g.kernel[1]; ++ky) {
      int64_t oy;
      if (!ExactQuotient(iy + py - ky * dy, sy, &oy) || oy >= oh) continue;
      for (int64_t kx = 0; kx < g.kernel[2]; ++kx) {
        int64_t ox;
        if (!ExactQuotient(ix + px - kx * dx, sx, &ox) || ox >= ow) continue;
        const int64_t p = (n * oh + oy) * ow + ox;
        if (p < p0 || p >= p1) continue;
        int32_t* a_p = acc + (p - p0) * w.cout;
        const int8_t* wt = w.w.data() + (ky * g.kernel[2] + kx) * w.cin * w.cout_g;
        for (int32_t i = 0; i < it->count; ++i) {
          const int64_t c = e[i].channel;
          int32_t* a = a_p + (c / w.cin_g) * w.cout_g;
          const int8_t* wc = wt + c * w.cout_g;
          if (avx2) {
            AddScaledRowAvx2(wc, e[i].delta, w.cout_g, a);
          } else {
            AddScaledRowScalar(wc, e[i].delta, w.cout_g, a);
          }
        }
      }
    }
  }
}

}  // namespace qfuse::runtime::onednn
