#include "runtime/kernels/quant/nhwc_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/quant/conv_tiles.h"

namespace qfuse::runtime::kernels::quant {
namespace {

using linalg::ConvGeometry;

// What one call shares between its tiles.
struct Plan {
  const NhwcConvArgs* args;
  const NhwcConvWeights* w;
  int64_t cin, k, out_plane;  // out_plane = OH * OW
  uint8_t pad;                // zp_x as a byte
  const uint8_t* pad_row;     // Cin bytes of `pad`
  bool pointwise;
};

// Input pixel (n, iy, ix) of output pixel p and tap (ky, kx), or null in the padding.
inline const uint8_t* TapSource(const Plan& plan, int64_t n, int64_t oy, int64_t ox, int64_t ky, int64_t kx) {
  const ConvGeometry& g = *plan.args->geometry;
  const int64_t iy = oy * g.stride[1] - g.pad_begin[1] + ky * g.dilation[1];
  const int64_t ix = ox * g.stride[2] - g.pad_begin[2] + kx * g.dilation[2];
  if (iy < 0 || iy >= g.image[1] || ix < 0 || ix >= g.image[2]) return nullptr;
  return plan.args->x + ((n * g.image[1] + iy) * g.image[2] + ix) * plan.cin;
}

// dst[0, n) = src[0, n) in 16-, 8- or 4-byte moves (the last one overlapping), no call.
inline void CopyRun(uint8_t* dst, const uint8_t* src, int64_t n) {
  if (n >= 16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    }
    if (i < n) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n - 16),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + n - 16)));
    }
  } else if (n >= 8) {
    uint64_t head, tail;
    std::memcpy(&head, src, 8);
    std::memcpy(&tail, src + n - 8, 8);
    std::memcpy(dst, &head, 8);
    std::memcpy(dst + n - 8, &tail, 8);
  } else if (n >= 4) {
    uint32_t head, tail;
    std::memcpy(&head, src, 4);
    std::memcpy(&tail, src + n - 4, 4);
    std::memcpy(dst, &head, 4);
    std::memcpy(dst + n - 4, &tail, 4);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// rows[p - p0][tap * cin_g + ic] = x[n][iy][ix][gi * cin_g + ic], or zp_x in the padding.
void Im2RowNhwc(const Plan& plan, int64_t gi, int64_t p0, int64_t p1, uint8_t* rows) {
  const ConvGeometry& g = *plan.args->geometry;
  const int64_t cin_g = plan.w->cin_g, ow = g.col[2];
  for (int64_t p = p0; p < p1; ++p, rows += plan.k) {
    const int64_t n = p / plan.out_plane, rem = p % plan.out_plane, oy = rem / ow, ox = rem % ow;
    uint8_t* dst = rows;
    for (int64_t ky = 0; ky < g.kernel[1]; ++ky) {
      // One group, no dilation along W, the kernel row inside the image: its taps are one
      // contiguous run of KW * Cin bytes.
      const int64_t iy = oy * g.stride[1] - g.pad_begin[1] + ky * g.dilation[1];
      const int64_t ix0 = ox * g.stride[2] - g.pad_begin[2];
      if (plan.w->group == 1 && g.dilation[2] == 1 && iy >= 0 && iy < g.image[1] && ix0 >= 0 &&
          ix0 + g.kernel[2] <= g.image[2]) {
        const int64_t run = g.kernel[2] * cin_g;
        CopyRun(dst, plan.args->x + ((n * g.image[1] + iy) * g.image[2] + ix0) * plan.cin, run);
        dst += run;
        continue;
      }
      for (int64_t kx = 0; kx < g.kernel[2]; ++kx, dst += cin_g) {
        const uint8_t* src = TapSource(plan, n, oy, ox, ky, kx);
        CopyRun(dst, src == nullptr ? plan.pad_row : src + gi * cin_g, cin_g);
      }
    }
  }
}

void GemmTile(const Plan& plan, int64_t p0, int64_t p1, int32_t* acc) {
  const NhwcConvWeights& w = *plan.w;
  const int64_t cout_g = w.cout / w.group;
  thread_local std::vector<uint8_t> rows;
  for (int64_t gi = 0; gi < w.group; ++gi) {
    Int8GemmArgs ga;
    ga.m = p1 - p0;
    if (plan.pointwise) {
      ga.a = plan.args->x + p0 * plan.cin + gi * w.cin_g;
      ga.lda = plan.cin;
    } else {
      rows.resize(static_cast<size_t>((p1 - p0) * plan.k));
      Im2RowNhwc(plan, gi, p0, p1, rows.data());
      ga.a = rows.data();
      ga.lda = plan.k;
    }
    ga.a_signed = plan.args->x_signed;
    ga.a_zero_point = plan.args->x_zero_point;
    ga.c = acc + gi * cout_g;
    ga.ldc = w.cout;
    IntegerGemm(ga, w.gemm[gi]);
  }
}

// acc[c] = offset[c] + sum_t src[t][c] * w[t][c] for c in [c0, c1), modulo 2^32 (w holds
// each 16-bit weight zero-extended, see NhwcConvWeights::dw).
template <typename X>
void DepthwiseScalar(const uint8_t* const* src, const int32_t* w, const int32_t* offset, int64_t taps,
                     int64_t channels, int64_t c0, int64_t c1, int32_t* acc) {
  for (int64_t c = c0; c < c1; ++c) {
    uint32_t a = static_cast<uint32_t>(offset[c]);
    for (int64_t t = 0; t < taps; ++t) {
      const int32_t xv = static_cast<X>(src[t][c]);
      a += static_cast<uint32_t>(xv * int32_t{static_cast<int16_t>(w[t * channels + c] & 0xFFFF)});
    }
    acc[c] = static_cast<int32_t>(a);
  }
}

// 8 bytes widened to int32 lanes (sign- or zero-extended).
template <bool kSigned>
__attribute__((target("avx2"), always_inline)) inline __m256i WidenBytes(const uint8_t* p) {
  const __m128i xb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return kSigned ? _mm256_cvtepi8_epi32(xb) : _mm256_cvtepu8_epi32(xb);
}

// 16 bytes widened to int16 lanes (sign- or zero-extended).
template <bool kSigned>
__attribute__((target("avx2"), always_inline)) inline __m256i WidenBytes16(const uint8_t* p) {
  const __m128i xb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return kSigned ? _mm256_cvtepi8_epi16(xb) : _mm256_cvtepu8_epi16(xb);
}

// How AddMadd sums int16 pair products into int32 lanes: vpmaddwd then vpaddd, or vpdpwssd,
// which does both in one instruction with the same wrapping sum, in AVX-512 VNNI's EVEX
// encoding (with AVX512VL on 256-bit registers) or AVX-VNNI's VEX one.
enum class PairDot { kMadd, kVex, kEvex };

// The fastest form the CPU and the ISA cap allow. EVEX first: AVX-512 VNNI CPUs without
// AVX-VNNI (Ice Lake, Zen 4) get it too, and on a CPU with both, the uncapped run takes EVEX
// and the avx2_vnni cap VEX, so tests on one machine run both.
PairDot CurrentPairDot() {
  if (IsaAllowed(Isa::kAvx512Vnni)) return PairDot::kEvex;
  if (VnniAllowed() && CpuHasAvxVnni()) return PairDot::kVex;
  return PairDot::kMadd;
}

// Calls pick(std::integral_constant<PairDot, dot>) and returns its result.
template <typename Pick>
auto ForPairDot(PairDot dot, Pick pick) {
  switch (dot) {
    case PairDot::kEvex: return pick(std::integral_constant<PairDot, PairDot::kEvex>{});
    case PairDot::kVex: return pick(std::integral_constant<PairDot, PairDot::kVex>{});
    case PairDot::kMadd: break;
  }
  return pick(std::integral_constant<PairDot, PairDot::kMadd>{});
}

// acc + the products of x's and w's int16 pairs, summed per int32 lane, modulo 2^32. The
// vpdpwssd forms are inline assembly so that the callers keep AVX2 as their target: no other
// instruction of theirs can be AVX-512 or AVX-VNNI, and they take kDot from CurrentPairDot().
template <PairDot kDot>
__attribute__((target("avx2"), always_inline)) inline __m256i AddMadd(__m256i acc, __m256i x, __m256i w) {
  if constexpr (kDot == PairDot::kVex) {
    asm("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(x), "xm"(w));
    return acc;
  } else if constexpr (kDot == PairDot::kEvex) {
    asm("%{evex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(x), "xm"(w));
    return acc;
  } else {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(x, w));
  }
}
template <PairDot kDot>
__attribute__((target("avx2"), always_inline)) inline __m256i AddMadd(__m256i acc, __m256i x, const int32_t* w) {
  return AddMadd<kDot>(acc, x, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
}

// DepthwiseScalar's sums with AVX2 for the blocks of 16 channels [0, 16 * (channels / 16)) of
// kPixels pixels, pixel k reading tap t at src[t] + k * step: two taps per AddMadd (x_t,
// x_t+1 interleaved against NhwcConvWeights::dw_pairs), each pair's weights loaded once for
// all kPixels pixels. Returns the channels done.
template <bool kSigned, int kPixels, PairDot kDot>
__attribute__((target("avx2"))) int64_t DepthwiseBlocksAvx2(const uint8_t* const* src, int64_t step,
                                                            const int32_t* pairs, const int32_t* offset, int64_t taps,
                                                            int64_t channels, int32_t* acc) {
  const int64_t blocks = channels / 16, pair_count = (taps + 1) / 2;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c = 16 * b;
    __m256i lo[kPixels], hi[kPixels];  // c0-3|c8-11, c4-7|c12-15
    for (int k = 0; k < kPixels; ++k) lo[k] = hi[k] = _mm256_setzero_si256();
    for (int64_t pp = 0; pp < pair_count; ++pp) {
      const int64_t t = 2 * pp;
      const uint8_t* s0 = src[t] + c;
      // Past the last tap the weight is 0: any readable bytes will do.
      const uint8_t* s1 = src[t + 1 < taps ? t + 1 : t] + c;
      const int32_t* wp = pairs + (pp * blocks + b) * 16;
      const __m256i w_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp));
      const __m256i w_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 8));
      for (int k = 0; k < kPixels; ++k) {
        const __m256i x0 = WidenBytes16<kSigned>(s0 + k * step), x1 = WidenBytes16<kSigned>(s1 + k * step);
        lo[k] = AddMadd<kDot>(lo[k], _mm256_unpacklo_epi16(x0, x1), w_lo);
        hi[k] = AddMadd<kDot>(hi[k], _mm256_unpackhi_epi16(x0, x1), w_hi);
      }
    }
    const __m256i off0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + c));
    const __m256i off1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + c + 8));
    for (int k = 0; k < kPixels; ++k) {
      int32_t* a = acc + k * channels + c;
      const __m256i first = _mm256_permute2x128_si256(lo[k], hi[k], 0x20);
      const __m256i second = _mm256_permute2x128_si256(lo[k], hi[k], 0x31);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a), _mm256_add_epi32(first, off0));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + 8), _mm256_add_epi32(second, off1));
    }
  }
  return 16 * blocks;
}

// The blocks of 16 channels of four output pixels of one row of a 3x3, undilated depthwise
// convolution with stride kStride, all taps inside the image: DepthwiseBlocksAvx2's sums, with
// the 3 * kStride + 3 input columns the four pixels read each loaded once. A column's rows 0
// and 1 are interleaved into 16-bit pairs (x_0, x_1), one AddMadd against (w_0kx, w_1kx) for
// each pixel that reads the column at kx; row 2 is widened to int32 lanes (x * w + 0 * 0).
// top: pixel 0's tap (0, 0); row_bytes: the bytes of one input row.
template <bool kSigned, int kStride, PairDot kDot>
__attribute__((target("avx2"))) void Depthwise3x3RowAvx2(const uint8_t* top, int64_t row_bytes,
                                                         const NhwcConvWeights& w, const int32_t* offset,
                                                         int64_t channels, int32_t* acc) {
  constexpr int kColumns = 3 * kStride + 3;
  const int32_t* columns = w.dw_columns.data();
  const int32_t* row2 = w.dw.data() + 6 * channels;  // taps (2, kx), zero-extended 16-bit
  for (int64_t c = 0; c + 16 <= channels; c += 16) {
    __m256i lo[4], hi[4];  // channels c..c+7, c+8..c+15
    const __m256i off0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + c));
    const __m256i off1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + c + 8));
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      lo[k] = off0;
      hi[k] = off1;
    }
#pragma GCC unroll 12
    for (int j = 0; j < kColumns; ++j) {
      const uint8_t* p = top + j * channels + c;
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + row_bytes));
      const __m128i pairs_lo = _mm_unpacklo_epi8(r0, r1), pairs_hi = _mm_unpackhi_epi8(r0, r1);
      const __m256i x01_lo = kSigned ? _mm256_cvtepi8_epi16(pairs_lo) : _mm256_cvtepu8_epi16(pairs_lo);
      const __m256i x01_hi = kSigned ? _mm256_cvtepi8_epi16(pairs_hi) : _mm256_cvtepu8_epi16(pairs_hi);
      const __m256i x2_lo = WidenBytes<kSigned>(p + 2 * row_bytes);
      const __m256i x2_hi = WidenBytes<kSigned>(p + 2 * row_bytes + 8);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const int kx = j - kStride * k;
        if (kx < 0 || kx > 2) continue;
        const int32_t* wc = columns + kx * channels + c;
        const int32_t* w2 = row2 + kx * channels + c;
        lo[k] = AddMadd<kDot>(AddMadd<kDot>(lo[k], x01_lo, wc), x2_lo, w2);
        hi[k] = AddMadd<kDot>(AddMadd<kDot>(hi[k], x01_hi, wc + 8), x2_hi, w2 + 8);
      }
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + k * channels + c), lo[k]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + k * channels + c + 8), hi[k]);
    }
  }
}

// Depthwise3x3RowAvx2's sums with AVX-512 VNNI, 16 channels per 512-bit register: a
// column's rows 0 and 1 interleaved bytewise (channels 0-7, then 8-15) and widened to 16
// int16 pairs in channel order, one vpdpwssd per pixel that reads the column against
// NhwcConvWeights::dw_columns; row 2 widened to 16 int32 lanes against `dw` (x * w + 0 * 0).
// GCC 12 warns that the _mm512_undefined_* pass-through operands of the unmasked intrinsics may
// be uninitialized (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <bool kSigned, int kStride>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void Depthwise3x3RowAvx512(
    const uint8_t* top, int64_t row_bytes, const NhwcConvWeights& w, const int32_t* offset, int64_t channels,
    int32_t* acc) {
  constexpr int kColumns = 3 * kStride + 3;
  const int32_t* columns = w.dw_columns.data();
  const int32_t* row2 = w.dw.data() + 6 * channels;
  for (int64_t c = 0; c + 16 <= channels; c += 16) {
    __m512i sums[4];
    const __m512i off = _mm512_loadu_si512(offset + c);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) sums[k] = off;
#pragma GCC unroll 12
    for (int j = 0; j < kColumns; ++j) {
      const uint8_t* p = top + j * channels + c;
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + row_bytes));
      const __m256i pairs = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(r0, r1)),
                                                    _mm_unpackhi_epi8(r0, r1), 1);
      const __m512i x01 = kSigned ? _mm512_cvtepi8_epi16(pairs) : _mm512_cvtepu8_epi16(pairs);
      const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * row_bytes));
      const __m512i x2 = kSigned ? _mm512_cvtepi8_epi32(r2) : _mm512_cvtepu8_epi32(r2);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const int kx = j - kStride * k;
        if (kx < 0 || kx > 2) continue;
        sums[k] = _mm512_dpwssd_epi32(sums[k], x01, _mm512_loadu_si512(columns + kx * channels + c));
        sums[k] = _mm512_dpwssd_epi32(sums[k], x2, _mm512_loadu_si512(row2 + kx * channels + c));
      }
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) _mm512_storeu_si512(acc + k * channels + c, sums[k]);
  }
}
#pragma GCC diagnostic pop

// The 3x3 row kernel for a source's signedness, a W stride (1, else 2) and a pair-dot form:
// 512-bit with AVX-512 VNNI (kEvex), else 256-bit.
using Depthwise3x3RowFn = void (*)(const uint8_t*, int64_t, const NhwcConvWeights&, const int32_t*, int64_t, int32_t*);
Depthwise3x3RowFn Depthwise3x3Row(bool x_signed, int64_t stride, PairDot dot) {
  if (dot == PairDot::kEvex) {
    return x_signed ? (stride == 1 ? Depthwise3x3RowAvx512<true, 1> : Depthwise3x3RowAvx512<true, 2>)
                    : (stride == 1 ? Depthwise3x3RowAvx512<false, 1> : Depthwise3x3RowAvx512<false, 2>);
  }
  const auto rows = [&](auto d) -> Depthwise3x3RowFn {
    constexpr PairDot kDot = decltype(d)::value;
    return x_signed ? (stride == 1 ? Depthwise3x3RowAvx2<true, 1, kDot> : Depthwise3x3RowAvx2<true, 2, kDot>)
                    : (stride == 1 ? Depthwise3x3RowAvx2<false, 1, kDot> : Depthwise3x3RowAvx2<false, 2, kDot>);
  };
  return dot == PairDot::kVex ? rows(std::integral_constant<PairDot, PairDot::kVex>{})
                              : rows(std::integral_constant<PairDot, PairDot::kMadd>{});
}

// DepthwiseScalar's sums with AVX2 for one pixel: the blocks of 16 (above), then a block of 8
// with one tap per lane (x widened to int32 lanes, its value in the low 16 bits, against w
// zero-extended from 16 bits: x * w + hi(x) * 0). Returns the channels done.
template <bool kSigned, PairDot kDot>
__attribute__((target("avx2"))) int64_t DepthwiseAvx2(const uint8_t* const* src, const int32_t* w,
                                                      const int32_t* pairs, const int32_t* offset, int64_t taps,
                                                      int64_t channels, int32_t* acc) {
  int64_t c = DepthwiseBlocksAvx2<kSigned, 1, kDot>(src, 0, pairs, offset, taps, channels, acc);
  for (; c + 8 <= channels; c += 8) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + c));
    for (int64_t t = 0; t < taps; ++t) {
      a = AddMadd<kDot>(a, WidenBytes<kSigned>(src[t] + c), w + t * channels + c);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c), a);
  }
  return c;
}

}  // namespace

const char* DepthwisePairDotName() {
  switch (CurrentPairDot()) {
    case PairDot::kEvex: return "vpdpwssd (EVEX)";
    case PairDot::kVex: return "vpdpwssd (VEX)";
    case PairDot::kMadd: break;
  }
  return "vpmaddwd";
}

namespace {

void DepthwiseTile(const Plan& plan, const int32_t* offset, int64_t p0, int64_t p1, int32_t* acc) {
  const ConvGeometry& g = *plan.args->geometry;
  const NhwcConvWeights& w = *plan.w;
  const int64_t channels = w.cout, ow = g.col[2], oh = g.col[1];
  thread_local std::vector<const uint8_t*> src;
  src.resize(static_cast<size_t>(w.taps));
  const bool avx2 = IsaAllowed(Isa::kAvx2), x_signed = plan.args->x_signed;
  const PairDot dot = CurrentPairDot();
  const auto quad_blocks = ForPairDot(dot, [x_signed](auto d) {
    constexpr PairDot kDot = decltype(d)::value;
    return x_signed ? DepthwiseBlocksAvx2<true, 4, kDot> : DepthwiseBlocksAvx2<false, 4, kDot>;
  });
  const auto pixel = ForPairDot(dot, [x_signed](auto d) {
    constexpr PairDot kDot = decltype(d)::value;
    return x_signed ? DepthwiseAvx2<true, kDot> : DepthwiseAvx2<false, kDot>;
  });
  // Taps of a pixel whose window lies inside the image: its first tap's source plus these
  // byte offsets (no bounds checks).
  thread_local std::vector<int64_t> tap_offset;
  tap_offset.resize(static_cast<size_t>(w.taps));
  for (int64_t ky = 0, t = 0; ky < g.kernel[1]; ++ky) {
    for (int64_t kx = 0; kx < g.kernel[2]; ++kx, ++t) {
      tap_offset[t] = (ky * g.dilation[1] * g.image[2] + kx * g.dilation[2]) * plan.cin;
    }
  }
  const int64_t span_y = (g.kernel[1] - 1) * g.dilation[1], span_x = (g.kernel[2] - 1) * g.dilation[2];
  // Four interior pixels of one row at once when every channel is in a block of 16: pixel k's
  // taps are pixel 0's moved by k strides.
  const int64_t step = g.stride[2] * plan.cin;
  const bool quads = avx2 && channels % 16 == 0;
  // 3x3, undilated, stride 1 or 2 along W: each input column's rows 0 and 1 paired once.
  const bool rows3x3 = !w.dw_columns.empty() && g.dilation[1] == 1 && g.dilation[2] == 1 &&
                       (g.stride[2] == 1 || g.stride[2] == 2);
  const Depthwise3x3RowFn row3x3 = rows3x3 ? Depthwise3x3Row(x_signed, g.stride[2], dot) : nullptr;
  int64_t n = p0 / plan.out_plane, oy = (p0 % plan.out_plane) / ow, ox = p0 % ow;
  for (int64_t p = p0; p < p1;) {
    const int64_t iy = oy * g.stride[1] - g.pad_begin[1], ix = ox * g.stride[2] - g.pad_begin[2];
    int64_t count = 1;
    if (iy >= 0 && iy + span_y < g.image[1] && ix >= 0 && ix + span_x < g.image[2]) {
      const uint8_t* first = plan.args->x + ((n * g.image[1] + iy) * g.image[2] + ix) * plan.cin;
      const bool quad = quads && p + 4 <= p1 && ox + 4 <= ow && ix + 3 * g.stride[2] + span_x < g.image[2];
      if (quad && rows3x3) {
        const int64_t row_bytes = g.image[2] * plan.cin;
        row3x3(first, row_bytes, w, offset, channels, acc);
      } else {
        for (int64_t t = 0; t < w.taps; ++t) src[t] = first + tap_offset[t];
        if (quad) {
          quad_blocks(src.data(), step, w.dw_pairs.data(), offset, w.taps, channels, acc);
        }
      }
      if (quad) count = 4;
    } else {
      for (int64_t ky = 0, t = 0; ky < g.kernel[1]; ++ky) {
        for (int64_t kx = 0; kx < g.kernel[2]; ++kx, ++t) {
          const uint8_t* s = TapSource(plan, n, oy, ox, ky, kx);
          src[t] = s == nullptr ? plan.pad_row : s;
        }
      }
    }
    if (count == 1) {
      int64_t done = 0;
      if (avx2) {
        done = pixel(src.data(), w.dw.data(), w.dw_pairs.data(), offset, w.taps, channels, acc);
      }
      if (plan.args->x_signed) {
        DepthwiseScalar<int8_t>(src.data(), w.dw.data(), offset, w.taps, channels, done, channels, acc);
      } else {
        DepthwiseScalar<uint8_t>(src.data(), w.dw.data(), offset, w.taps, channels, done, channels, acc);
      }
    }
    p += count;
    acc += count * channels;
    ox += count;  // a quad stays within its row
    if (ox == ow) {
      ox = 0;
      if (++oy == oh) {
        oy = 0;
        ++n;
      }
    }
  }
}

}  // namespace

NhwcConvWeights PrepareNhwcConvWeights(const ir::Tensor& w, int64_t group, absl::Span<const int32_t> w_zps) {
  NhwcConvWeights out;
  out.group = group;
  out.cout = w.dims()[0];
  out.cin_g = w.dims()[1];
  out.taps = w.dims()[2] * w.dims()[3];
  const int64_t cout_g = out.cout / group, k = out.cin_g * out.taps;
  out.depthwise = out.cin_g == 1 && cout_g == 1;
  const bool is_signed = w.dtype() == ir::DataType::kInt8;
  const auto* bytes = static_cast<const uint8_t*>(w.raw_data());
  auto value = [&](int64_t i) -> int32_t {
    return is_signed ? int32_t{static_cast<int8_t>(bytes[i])} : int32_t{bytes[i]};
  };
  auto zp = [&](int64_t oc) { return w_zps.size() == 1 ? w_zps[0] : w_zps[oc]; };
  if (out.depthwise) {
    out.dw.resize(static_cast<size_t>(out.taps * out.cout));
    out.dw_sums.assign(static_cast<size_t>(out.cout), 0);
    for (int64_t c = 0; c < out.cout; ++c) {
      for (int64_t t = 0; t < out.taps; ++t) {
        const int32_t v = value(c * out.taps + t) - zp(c);
        out.dw[t * out.cout + c] = static_cast<int32_t>(static_cast<uint16_t>(static_cast<int16_t>(v)));
        out.dw_sums[c] += v;
        out.max_abs = std::max<int64_t>(out.max_abs, std::abs(v));
      }
    }
    // dw_pairs: lane l of run h (0: vpunpcklwd's channels, 1: vpunpckhwd's) of block b is
    // channel 16b + 8 * (l / 4) + 4h + l % 4.
    const int64_t blocks = out.cout / 16, pair_count = (out.taps + 1) / 2;
    out.dw_pairs.assign(static_cast<size_t>(pair_count * blocks * 16), 0);
    for (int64_t pp = 0; pp < pair_count; ++pp) {
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t h = 0; h < 2; ++h) {
          for (int64_t l = 0; l < 8; ++l) {
            const int64_t c = 16 * b + 8 * (l / 4) + 4 * h + l % 4;
            const uint32_t w0 = static_cast<uint32_t>(out.dw[2 * pp * out.cout + c]) & 0xFFFF;
            const uint32_t w1 =
                2 * pp + 1 < out.taps ? static_cast<uint32_t>(out.dw[(2 * pp + 1) * out.cout + c]) & 0xFFFF : 0;
            out.dw_pairs[(pp * blocks + b) * 16 + h * 8 + l] = static_cast<int32_t>(w0 | (w1 << 16));
          }
        }
      }
    }
    if (w.dims()[2] == 3 && w.dims()[3] == 3) {
      out.dw_columns.resize(static_cast<size_t>(3 * out.cout));
      for (int64_t kx = 0; kx < 3; ++kx) {
        for (int64_t c = 0; c < out.cout; ++c) {
          const uint32_t w0 = static_cast<uint32_t>(out.dw[kx * out.cout + c]) & 0xFFFF;
          const uint32_t w1 = static_cast<uint32_t>(out.dw[(3 + kx) * out.cout + c]) & 0xFFFF;
          out.dw_columns[kx * out.cout + c] = static_cast<int32_t>(w0 | (w1 << 16));
        }
      }
    }
    return out;
  }
  // Reorder each group's weights to [oc][tap][ic] (the im2row order), then prepare them.
  ir::Tensor ohwi = ir::Tensor::CreateUninitialized(w.dtype(), {out.cout, k}).value();
  auto* dst = static_cast<uint8_t*>(ohwi.raw_data());
  for (int64_t oc = 0; oc < out.cout; ++oc) {
    for (int64_t ic = 0; ic < out.cin_g; ++ic) {
      for (int64_t t = 0; t < out.taps; ++t)
        dst[oc * k + t * out.cin_g + ic] = bytes[(oc * out.cin_g + ic) * out.taps + t];
    }
  }
  out.gemm = PrepareConvGroups(ohwi, group, w_zps);  // ohwi is [Cout, k]: the same groups
  for (const PreparedWeights& g : out.gemm) out.max_abs = std::max(out.max_abs, g.max_abs);
  return out;
}

void ForEachNhwcConvTile(const NhwcConvArgs& args, const NhwcConvWeights& w, NhwcTileFn tile) {
  const ConvGeometry& g = *args.geometry;
  Plan plan;
  plan.args = &args;
  plan.w = &w;
  plan.cin = w.cin_g * w.group;
  plan.k = w.cin_g * w.taps;
  plan.out_plane = g.col[1] * g.col[2];
  plan.pad = static_cast<uint8_t>(args.x_zero_point);
  plan.pointwise = g.IsPointwise();
  const std::vector<uint8_t> pad_row(static_cast<size_t>(plan.cin), plan.pad);
  plan.pad_row = pad_row.data();
  const int64_t pixels = args.batch * plan.out_plane;
  if (pixels == 0 || w.cout == 0) return;
  // About four tiles per thread, 8 to 64 pixels each.
  const int threads = args.pool == nullptr ? 1 : args.pool->num_threads();
  const int64_t per_tile =
      std::clamp<int64_t>(((pixels + 4 * threads - 1) / (4 * threads) + 7) & ~int64_t{7}, 8, kNhwcMaxTilePixels);
  const int64_t tasks = (pixels + per_tile - 1) / per_tile;
  std::vector<int32_t> dw_offset;
  if (w.depthwise) {  // -zp_x * sum_t w_t[c], modulo 2^32
    dw_offset.resize(static_cast<size_t>(w.cout));
    for (int64_t c = 0; c < w.cout; ++c) {
      dw_offset[c] =
          static_cast<int32_t>(0u - static_cast<uint32_t>(args.x_zero_point) * static_cast<uint32_t>(w.dw_sums[c]));
    }
  }
  auto run = [&](int64_t begin, int64_t end) {
    thread_local std::vector<int32_t> acc;
    acc.resize(static_cast<size_t>(per_tile * w.cout));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t p0 = task * per_tile, p1 = std::min(pixels, p0 + per_tile);
      if (w.depthwise) {
        DepthwiseTile(plan, dw_offset.data(), p0, p1, acc.data());
      } else {
        GemmTile(plan, p0, p1, acc.data());
      }
      tile(p0, p1, acc.data());
    }
  };
  if (args.pool == nullptr || tasks < 2) {
    run(0, tasks);
  } else {
    args.pool->ParallelFor(tasks, 1, run);
  }
}

}  // namespace qfuse::runtime::kernels::quant
