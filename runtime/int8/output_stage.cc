#include "runtime/int8/output_stage.h"

#include "runtime/cpu_isa.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/int8/activated_pixels.h"

namespace qfuse::runtime::int8 {
namespace {

template <typename T>
void Bounds(const OutputStageSpec& spec, int32_t* lo, int32_t* hi) {
  const int32_t zp = spec.output_zero_point;
  *lo = numerics::QuantizeLinear<T>(spec.act_min, spec.output_scale, zp);
  *hi = numerics::QuantizeLinear<T>(spec.act_max, spec.output_scale, zp);
}

// ---------------------------------------------------------------------------------------
// Vectorised rows. Every kernel reproduces the scalar OutputStage::Quantize bit for bit:
//   kOnnx: int32 -> float32 (cvtdq2ps = cvtsi2ss), separate float32 multiplies and add
//          (no FMA: this file is built with -ffp-contract=off and the targets carry no
//          "fma"), MAXPS/MINPS = ClampLikeMlas, cvtps2dq under the default MXCSR rounding
//          = lrintf (round half to even).
//   kFixed: the gemmlowp operations in int32 lanes (products in 64-bit halves).
// Results lie in [lo, hi], inside int8 / uint8, so the low byte of each lane is stored.

__attribute__((target("avx2"))) inline __m256i LoadA8(const int32_t* a, __m256i bias) {
  return _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)), bias);
}

__attribute__((target("avx2"))) inline __m256i LoadB8(const uint8_t* b, bool b_signed, __m256i b_zp) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
  return _mm256_sub_epi32(b_signed ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v), b_zp);
}

__attribute__((target("avx2"))) inline void StoreLowBytes8(__m256i q, uint8_t* out) {
  const __m256i shuffle = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                           0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i p = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(q, shuffle), _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(p));
}

// OutputStage::QuantizeFloatStepsRow's float32 steps, eight at a time.
__attribute__((target("avx2"))) int64_t FloatStepsAvx2(const int32_t* a, const float* d, const float* bias,
                                                        const uint8_t* b, bool b_signed, int32_t b_zp, float s_b,
                                                        float scale, float flo, float fhi, int32_t zp, int64_t n,
                                                        uint8_t* out) {
  const __m256i vbzp = _mm256_set1_epi32(b_zp), vzp = _mm256_set1_epi32(zp);
  const __m256 vsb = _mm256_set1_ps(s_b), vscale = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(flo), hi = _mm256_set1_ps(fhi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i))),
                             _mm256_loadu_ps(d + i));
    if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
    if (b != nullptr) v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_cvtepi32_ps(LoadB8(b + i, b_signed, vbzp)), vsb));
    const __m256 f = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(v, vscale), lo), hi);  // ClampLikeMlas
    StoreLowBytes8(_mm256_add_epi32(_mm256_cvtps_epi32(f), vzp), out + i);
  }
  return i;
}

// OutputStage::DequantizePixels, eight channels at a time: the int32 sum with the bias, one
// float32 conversion and product per term, their sum, then the activation bounds as MAXPS /
// MINPS (the sums are never NaN). Returns how many channels of every pixel it wrote (a
// multiple of 8); the caller finishes each pixel's last ones.
__attribute__((target("avx2"))) int64_t DequantizePixelsAvx2(const int32_t* a, const int32_t* bias, const uint8_t* b,
                                                              bool b_signed, int32_t b_zp, const float* da,
                                                              bool da_per_tensor, float db, float act_lo,
                                                              float act_hi, int64_t channels, int64_t pixels,
                                                              float* out) {
  const int64_t whole = channels / 8 * 8;
  const __m256i vbzp = _mm256_set1_epi32(b_zp), zero = _mm256_setzero_si256();
  const __m256 vdb = _mm256_set1_ps(db), lo = _mm256_set1_ps(act_lo), hi = _mm256_set1_ps(act_hi);
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t at = p * channels;
    for (int64_t j = 0; j < whole; j += 8) {
      const __m256i vbias = bias == nullptr ? zero : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + j));
      const __m256 d = da_per_tensor ? _mm256_set1_ps(da[0]) : _mm256_loadu_ps(da + j);
      __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(LoadA8(a + at + j, vbias)), d);
      if (b != nullptr) y = _mm256_add_ps(y, _mm256_mul_ps(_mm256_cvtepi32_ps(LoadB8(b + at + j, b_signed, vbzp)), vdb));
      _mm256_storeu_ps(out + at + j, _mm256_min_ps(_mm256_max_ps(y, lo), hi));
    }
  }
  return whole;
}

struct OnnxRow {
  float ma, mb, flo, fhi;
  int32_t zp;
  float divisor;  // 1 (no division) or s_y (dequantize_then_quantize)
};

__attribute__((target("avx2"))) int64_t OnnxRowAvx2(const OnnxRow& r, const int32_t* a, int32_t bias, const uint8_t* b,
                                                     bool b_signed, int32_t b_zp, int64_t n, uint8_t* out) {
  const __m256i vbias = _mm256_set1_epi32(bias), vbzp = _mm256_set1_epi32(b_zp), vzp = _mm256_set1_epi32(r.zp);
  const __m256 ma = _mm256_set1_ps(r.ma), mb = _mm256_set1_ps(r.mb), lo = _mm256_set1_ps(r.flo), hi = _mm256_set1_ps(r.fhi);
  const __m256 div = _mm256_set1_ps(r.divisor);
  const bool divide = r.divisor != 1.f;
  int64_t i = 0;
  if (b == nullptr) {
    for (; i + 8 <= n; i += 8) {
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(LoadA8(a + i, vbias)), ma);
      if (divide) f = _mm256_div_ps(f, div);
      f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
      StoreLowBytes8(_mm256_add_epi32(_mm256_cvtps_epi32(f), vzp), out + i);
    }
  } else {
    for (; i + 8 <= n; i += 8) {
      const __m256 fa = _mm256_mul_ps(_mm256_cvtepi32_ps(LoadA8(a + i, vbias)), ma);
      const __m256 fb = _mm256_mul_ps(_mm256_cvtepi32_ps(LoadB8(b + i, b_signed, vbzp)), mb);
      __m256 f = _mm256_add_ps(fa, fb);
      if (divide) f = _mm256_div_ps(f, div);
      f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
      StoreLowBytes8(_mm256_add_epi32(_mm256_cvtps_epi32(f), vzp), out + i);
    }
  }
  return i;
}

// OnnxRowAvx2 over whole channels-last pixels, with the per-call choices (bias, one
// multiplier or one per channel, residual and its signedness, division) fixed at compile
// time so that the inner loop carries no branches.
// kLinearMap: the stage's integer (before its zero point) r goes on through the byte map's
// linear form clamp(round(r * ratio), lo, hi) + zp (OutputStage::SetByteMap checked that it
// equals the map on every r the stage writes).
template <bool kBias, bool kPerTensor, bool kResidual, bool kSignedResidual, bool kDivide, bool kLinearMap>
__attribute__((target("avx2"))) void OnnxPixelsAvx2Loop(const float* ma, float mb, float divisor, float flo,
                                                         float fhi, int32_t zp, const LinearByteMap& map,
                                                         const int32_t* a, const int32_t* bias, const uint8_t* b,
                                                         int32_t b_zp, int64_t channels, int64_t whole, int64_t pixels,
                                                         uint8_t* out) {
  const __m256i vbzp = _mm256_set1_epi32(b_zp), vzp = _mm256_set1_epi32(kLinearMap ? map.zero_point : zp);
  const __m256 vmb = _mm256_set1_ps(mb), lo = _mm256_set1_ps(flo), hi = _mm256_set1_ps(fhi);
  const __m256 div = _mm256_set1_ps(divisor), ma0 = _mm256_set1_ps(ma[0]);
  const __m256 ratio = _mm256_set1_ps(map.ratio), map_lo = _mm256_set1_ps(map.lo), map_hi = _mm256_set1_ps(map.hi);
  // f before the clamp (bias, multiplier, residual, division).
  const auto real8 = [&](int64_t base, int64_t j) __attribute__((always_inline, target("avx2"))) {
    __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + base + j));
    if (kBias) va = _mm256_add_epi32(va, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + j)));
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(va), kPerTensor ? ma0 : _mm256_loadu_ps(ma + j));
    if (kResidual) {
      f = _mm256_add_ps(f, _mm256_mul_ps(_mm256_cvtepi32_ps(LoadB8(b + base + j, kSignedResidual, vbzp)), vmb));
    }
    if (kDivide) f = _mm256_div_ps(f, div);
    return f;
  };
  const auto quantize8 = [&](int64_t base, int64_t j) __attribute__((always_inline, target("avx2"))) {
    __m256 f = _mm256_min_ps(_mm256_max_ps(real8(base, j), lo), hi);
    if (kLinearMap) {
      f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtps_epi32(f)), ratio);
      f = _mm256_min_ps(_mm256_max_ps(f, map_lo), map_hi);
    }
    return _mm256_add_epi32(_mm256_cvtps_epi32(f), vzp);
  };
  // 32 channels per store. Without a map, the lower bound and the zero point come after the
  // rounding, in int16 with saturation: max(rne(min(f, hi - zp)) + zp, lo) = rne(clamp(f, lo -
  // zp, hi - zp)) + zp (whole-number bounds, monotonic rounding). The upper bound stays in
  // float32, so cvtps2dq never meets f >= 2^31 (INT_MIN); below lo - zp, a saturated value, and
  // a NaN f as in the scalar stage, end at lo. For lo 0 or -128 the final pack's saturation is
  // that max. With a map, results in [-128, 255] pack to int16 exactly and their low bytes
  // (masked, packed unsigned) are the bytes. The packs work within 128-bit halves (4-byte
  // groups c0-3 c8-11 c16-19 c24-27 c4-7 c12-15 c20-23 c28-31); one vpermd restores the order.
  const int32_t lo_q = static_cast<int32_t>(flo) + zp;
  const bool max_lo = lo_q != 0 && lo_q != -128, signed_pack = lo_q < 0;
  const __m256i zp16 = _mm256_set1_epi16(static_cast<int16_t>(zp)),
                lo16 = _mm256_set1_epi16(static_cast<int16_t>(lo_q));
  const __m256i low_byte = _mm256_set1_epi16(0xff), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const auto int16_lanes = [&](int64_t base, int64_t j) __attribute__((always_inline, target("avx2"))) {
    if constexpr (kLinearMap) {
      return _mm256_and_si256(_mm256_packs_epi32(quantize8(base, j), quantize8(base, j + 8)), low_byte);
    } else {
      // min(hi, f) passes a NaN f through (MINPS returns its second operand), to INT_MIN: lo.
      const __m256i r0 = _mm256_cvtps_epi32(_mm256_min_ps(hi, real8(base, j)));
      const __m256i r1 = _mm256_cvtps_epi32(_mm256_min_ps(hi, real8(base, j + 8)));
      const __m256i q = _mm256_adds_epi16(_mm256_packs_epi32(r0, r1), zp16);
      return max_lo ? _mm256_max_epi16(q, lo16) : q;
    }
  };
  const int64_t whole32 = whole & ~int64_t{31};
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t base = p * channels;
    int64_t j = 0;
    for (; j < whole32; j += 32) {
      const __m256i q01 = int16_lanes(base, j), q23 = int16_lanes(base, j + 16);
      const __m256i bytes = !kLinearMap && signed_pack ? _mm256_packs_epi16(q01, q23) : _mm256_packus_epi16(q01, q23);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + base + j), _mm256_permutevar8x32_epi32(bytes, order));
    }
    for (; j < whole; j += 8) StoreLowBytes8(quantize8(base, j), out + base + j);
  }
}

// Calls Loop<choices...> with the n run-time choices as template arguments.
template <template <bool...> class Loop, int n, bool... kFixed>
struct BoolDispatch {
  template <typename... Args>
  static void Run(const bool* choices, Args&&... args) {
    if constexpr (sizeof...(kFixed) == n) {
      Loop<kFixed...>::Run(args...);
    } else if (choices[sizeof...(kFixed)]) {
      BoolDispatch<Loop, n, kFixed..., true>::Run(choices, args...);
    } else {
      BoolDispatch<Loop, n, kFixed..., false>::Run(choices, args...);
    }
  }
};
template <bool kBias, bool kPerTensor, bool kResidual, bool kSignedResidual, bool kDivide>
struct PlainPixelsLoop {
  template <typename... Args>
  static void Run(Args... args) {
    OnnxPixelsAvx2Loop<kBias, kPerTensor, kResidual, kSignedResidual, kDivide, false>(args...);
  }
};
// A linear byte map comes with the `bn` level's folded clamps, after units without a residual.
template <bool kBias, bool kPerTensor, bool kDivide>
struct MappedPixelsLoop {
  template <typename... Args>
  static void Run(Args... args) {
    OnnxPixelsAvx2Loop<kBias, kPerTensor, false, false, kDivide, true>(args...);
  }
};

// Returns how many channels of each pixel it wrote (channels rounded down to 8), the caller
// finishing the rest; `map` (or null) is a linear byte map to apply. Returns 0 for a map
// with a residual.
int64_t OnnxPixelsAvx2(const float* ma, bool ma_per_tensor, float mb, float divisor, float flo, float fhi, int32_t zp,
                       const LinearByteMap* map, const int32_t* a, const int32_t* bias, const uint8_t* b,
                       bool b_signed, int32_t b_zp, int64_t channels, int64_t pixels, uint8_t* out) {
  const int64_t whole = channels & ~int64_t{7};
  if (map != nullptr) {
    if (b != nullptr) return 0;
    const bool choices[3] = {bias != nullptr, ma_per_tensor, divisor != 1.f};
    BoolDispatch<MappedPixelsLoop, 3>::Run(choices, ma, mb, divisor, flo, fhi, zp, *map, a, bias, b, b_zp, channels,
                                           whole, pixels, out);
    return whole;
  }
  const bool choices[5] = {bias != nullptr, ma_per_tensor, b != nullptr, b != nullptr && b_signed, divisor != 1.f};
  BoolDispatch<PlainPixelsLoop, 5>::Run(choices, ma, mb, divisor, flo, fhi, zp, LinearByteMap{}, a, bias, b, b_zp,
                                        channels, whole, pixels, out);
  return whole;
}

// GCC 12 warns that the _mm512_undefined_* pass-through operands of the unmasked
// intrinsics may be uninitialized (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) int64_t OnnxRowAvx512(const OnnxRow& r, const int32_t* a, int32_t bias,
                                                          const uint8_t* b, bool b_signed, int32_t b_zp, int64_t n,
                                                          uint8_t* out) {
  const __m512i vbias = _mm512_set1_epi32(bias), vbzp = _mm512_set1_epi32(b_zp), vzp = _mm512_set1_epi32(r.zp);
  const __m512 ma = _mm512_set1_ps(r.ma), mb = _mm512_set1_ps(r.mb), lo = _mm512_set1_ps(r.flo), hi = _mm512_set1_ps(r.fhi);
  const __m512 div = _mm512_set1_ps(r.divisor);
  const bool divide = r.divisor != 1.f;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i va = _mm512_add_epi32(_mm512_loadu_si512(a + i), vbias);
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(va), ma);
    if (b != nullptr) {
      const __m128i bv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
      const __m512i vb = _mm512_sub_epi32(b_signed ? _mm512_cvtepi8_epi32(bv) : _mm512_cvtepu8_epi32(bv), vbzp);
      f = _mm512_add_ps(f, _mm512_mul_ps(_mm512_cvtepi32_ps(vb), mb));
    }
    if (divide) f = _mm512_div_ps(f, div);
    f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), vzp);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(q));
  }
  return i;
}

// OnnxRowAvx512 over whole channels-last pixels: one channel per lane (per-lane multipliers
// and biases), the last group of each pixel's channels masked.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void OnnxPixelsAvx512(
    const float* ma, bool ma_per_tensor, float mb, float divisor, float flo, float fhi, int32_t zp, const int32_t* a,
    const int32_t* bias, const uint8_t* b, bool b_signed, int32_t b_zp, int64_t channels, int64_t pixels,
    uint8_t* out) {
  const __m512i vbzp = _mm512_set1_epi32(b_zp), vzp = _mm512_set1_epi32(zp);
  const __m512 vmb = _mm512_set1_ps(mb), lo = _mm512_set1_ps(flo), hi = _mm512_set1_ps(fhi);
  const __m512 div = _mm512_set1_ps(divisor);
  const bool divide = divisor != 1.f;
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t base = p * channels;
    for (int64_t j = 0; j < channels; j += 16) {
      const int64_t lanes = std::min<int64_t>(16, channels - j);
      const __mmask16 m = static_cast<__mmask16>(lanes == 16 ? 0xFFFF : (1u << lanes) - 1u);
      __m512i va = _mm512_maskz_loadu_epi32(m, a + base + j);
      if (bias != nullptr) va = _mm512_add_epi32(va, _mm512_maskz_loadu_epi32(m, bias + j));
      const __m512 vma = ma_per_tensor ? _mm512_set1_ps(ma[0]) : _mm512_maskz_loadu_ps(m, ma + j);
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(va), vma);
      if (b != nullptr) {
        const __m128i bv = _mm_maskz_loadu_epi8(m, b + base + j);
        const __m512i vb = _mm512_sub_epi32(b_signed ? _mm512_cvtepi8_epi32(bv) : _mm512_cvtepu8_epi32(bv), vbzp);
        f = _mm512_add_ps(f, _mm512_mul_ps(_mm512_cvtepi32_ps(vb), vmb));
      }
      if (divide) f = _mm512_div_ps(f, div);
      f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), vzp);
      _mm512_mask_cvtepi32_storeu_epi8(out + base + j, m, q);
    }
  }
}
#pragma GCC diagnostic pop

// numerics::MultiplyByQuantizedMultiplier per int32 lane (multiplier in [2^30, 2^31)).
struct FixedLanes {
  int left = 0, right = 0;
  int32_t multiplier = 0;
};

__attribute__((target("avx2"))) inline __m256i RoundingDivideByPOT8(__m256i h, int exponent) {
  const __m256i mask = _mm256_set1_epi32(static_cast<int32_t>((int64_t{1} << exponent) - 1));
  const __m256i remainder = _mm256_and_si256(h, mask);
  const __m256i threshold = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_srai_epi32(h, 31));
  const __m256i shifted = _mm256_sra_epi32(h, _mm_cvtsi32_si128(exponent));
  return _mm256_sub_epi32(shifted, _mm256_cmpgt_epi32(remainder, threshold));
}

__attribute__((target("avx2"))) inline __m256i MultiplyByQuantizedMultiplier8(__m256i x, const FixedLanes& m) {
  if (m.left > 0) {  // saturating left shift
    const __m256i over = _mm256_cmpgt_epi32(x, _mm256_set1_epi32(std::numeric_limits<int32_t>::max() >> m.left));
    const __m256i under = _mm256_cmpgt_epi32(_mm256_set1_epi32(std::numeric_limits<int32_t>::min() >> m.left), x);
    x = _mm256_sll_epi32(x, _mm_cvtsi32_si128(m.left));
    x = _mm256_blendv_epi8(x, _mm256_set1_epi32(std::numeric_limits<int32_t>::max()), over);
    x = _mm256_blendv_epi8(x, _mm256_set1_epi32(std::numeric_limits<int32_t>::min()), under);
  }
  // SaturatingRoundingDoublingHighMul(x, M) with M > 0: sign(x) * ((|x| M + 2^30 - [x < 0]) >> 31)
  // (|INT32_MIN| = 2^31 as an unsigned lane).
  const __m256i neg = _mm256_srai_epi32(x, 31);
  const __m256i negbit = _mm256_srli_epi32(x, 31);
  const __m256i ax = _mm256_abs_epi32(x);
  const __m256i mult = _mm256_set1_epi64x(static_cast<int64_t>(m.multiplier));
  const __m256i nudge = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i low32 = _mm256_set1_epi64x(0xffffffffLL);
  __m256i even = _mm256_mul_epu32(ax, mult);
  __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(ax, 32), mult);
  even = _mm256_sub_epi64(_mm256_add_epi64(even, nudge), _mm256_and_si256(negbit, low32));
  odd = _mm256_sub_epi64(_mm256_add_epi64(odd, nudge), _mm256_srli_epi64(negbit, 32));
  even = _mm256_srli_epi64(even, 31);
  odd = _mm256_slli_epi64(_mm256_srli_epi64(odd, 31), 32);
  __m256i h = _mm256_blend_epi32(even, odd, 0xAA);
  h = _mm256_sub_epi32(_mm256_xor_si256(h, neg), neg);
  return m.right > 0 ? RoundingDivideByPOT8(h, m.right) : h;
}

__attribute__((target("avx2"))) inline __m256i SaturatingAdd8(__m256i x, __m256i y) {
  const __m256i s = _mm256_add_epi32(x, y);
  const __m256i overflow = _mm256_srai_epi32(_mm256_and_si256(_mm256_xor_si256(s, x), _mm256_xor_si256(s, y)), 31);
  const __m256i saturated = _mm256_xor_si256(_mm256_srai_epi32(x, 31), _mm256_set1_epi32(std::numeric_limits<int32_t>::max()));
  return _mm256_blendv_epi8(s, saturated, overflow);
}

struct FixedRow {
  FixedLanes a, b;
  int32_t zp, lo, hi;
};

__attribute__((target("avx2"))) int64_t FixedRowAvx2(const FixedRow& r, const int32_t* a, int32_t bias, const uint8_t* b,
                                                      bool b_signed, int32_t b_zp, int64_t n, uint8_t* out) {
  const __m256i vbias = _mm256_set1_epi32(bias), vbzp = _mm256_set1_epi32(b_zp), vzp = _mm256_set1_epi32(r.zp);
  // clamp(q + zp, lo, hi) == clamp(q, lo - zp, hi - zp) + zp without int32 overflow.
  const __m256i lo = _mm256_set1_epi32(r.lo - r.zp), hi = _mm256_set1_epi32(r.hi - r.zp);
  int64_t i = 0;
  if (b == nullptr) {
    for (; i + 8 <= n; i += 8) {
      __m256i q = MultiplyByQuantizedMultiplier8(LoadA8(a + i, vbias), r.a);
      q = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
      StoreLowBytes8(_mm256_add_epi32(q, vzp), out + i);
    }
  } else {
    for (; i + 8 <= n; i += 8) {
      const __m256i ta = MultiplyByQuantizedMultiplier8(LoadA8(a + i, vbias), r.a);
      const __m256i tb = MultiplyByQuantizedMultiplier8(LoadB8(b + i, b_signed, vbzp), r.b);
      __m256i q = RoundingDivideByPOT8(SaturatingAdd8(ta, tb), kTwoTermFractionBits);
      q = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
      StoreLowBytes8(_mm256_add_epi32(q, vzp), out + i);
    }
  }
  return i;
}

FixedLanes Lanes(numerics::FixedMultiplier m) {
  FixedLanes l;
  l.left = m.shift > 0 ? m.shift : 0;
  l.right = m.shift > 0 ? 0 : -m.shift;
  l.multiplier = m.multiplier;
  return l;
}

// The level SetRequantizeIsa asked for (the highest until a test lowers it).
std::atomic<int>& RequestedLevel() {
  static std::atomic<int> level{static_cast<int>(RequantizeIsa::kAvx512)};
  return level;
}

}  // namespace

RequantizeIsa MaxRequantizeIsa() {
  if (IsaAllowed(Isa::kAvx512)) return RequantizeIsa::kAvx512;
  if (IsaAllowed(Isa::kAvx2)) return RequantizeIsa::kAvx2;
  return RequantizeIsa::kScalar;
}

void SetRequantizeIsa(RequantizeIsa isa) { RequestedLevel().store(static_cast<int>(isa), std::memory_order_relaxed); }

RequantizeIsa CurrentRequantizeIsa() {
  return static_cast<RequantizeIsa>(
      std::min(RequestedLevel().load(std::memory_order_relaxed), static_cast<int>(MaxRequantizeIsa())));
}

int64_t OutputStage::FloatStepsSimd(const int32_t* a, const float* d, const float* bias, const uint8_t* b,
                                    bool b_signed, int32_t b_zp, float s_b, int64_t n, uint8_t* out) const {
  if (CurrentRequantizeIsa() == RequantizeIsa::kScalar || output_type_ == ir::DataType::kFloat32) return 0;
  return FloatStepsAvx2(a, d, bias, b, b_signed, b_zp, s_b, output_scale_, flo_, fhi_, zp_, n, out);
}

int64_t OutputStage::DequantizePixelsSimd(const int32_t* a, const int32_t* bias, const uint8_t* b, bool b_signed,
                                          int32_t b_zp, int64_t channels, int64_t pixels, float* out) const {
  if (CurrentRequantizeIsa() == RequantizeIsa::kScalar) return 0;
  return DequantizePixelsAvx2(a, bias, b, b_signed, b_zp, dequant_a_.data(), dequant_a_.size() == 1, dequant_b_,
                              act_min_, act_max_, channels, pixels, out);
}

bool OutputStage::ActivatePixels(const ir::UnitSpec& activation, const int32_t* a, const int32_t* bias,
                                 const uint8_t* b, bool b_signed, int32_t b_zp, int64_t channels, int64_t pixels,
                                 uint8_t* out, bool out_signed) const {
  if (CurrentRequantizeIsa() != RequantizeIsa::kAvx512 || output_type_ == ir::DataType::kFloat32 ||
      byte_map_ != nullptr) {
    return false;
  }
  ActivatedPixelsArgs args;
  args.a = a;
  args.bias = bias;
  args.b = b;
  args.b_signed = b_signed;
  args.b_zero_point = b_zp;
  args.dequant_a = dequant_a_.data();
  args.dequant_a_per_tensor = dequant_a_.size() == 1;
  args.dequant_b = dequant_b_;
  args.act_min = act_min_;
  args.act_max = act_max_;
  args.activation = activation;
  args.output_scale = output_scale_;
  args.output_zero_point = zp_;
  args.out_signed = out_signed;
  args.channels = channels;
  args.pixels = pixels;
  args.out = out;
  return ActivatePixelsInOnePass(args);
}

int64_t OutputStage::QuantizePixelsSimd(const int32_t* a, const int32_t* bias, const uint8_t* b, bool b_signed,
                                        int32_t b_zp, int64_t channels, int64_t pixels, uint8_t* out) const {
  const RequantizeIsa isa = CurrentRequantizeIsa();
  if (isa == RequantizeIsa::kScalar || mode_ != numerics::RequantizeMode::kOnnx ||
      output_type_ == ir::DataType::kFloat32) {
    return 0;
  }
  if (isa == RequantizeIsa::kAvx512) {
    OnnxPixelsAvx512(onnx_a_.data(), onnx_a_.size() == 1, onnx_b_, divisor_, flo_, fhi_, zp_, a, bias, b, b_signed, b_zp,
                     channels, pixels, out);
    if (byte_map_ != nullptr) MapBytes(*byte_map_, out, pixels * channels);
    return pixels;
  }
  const LinearByteMap* linear = linear_map_.has_value() ? &*linear_map_ : nullptr;
  const int64_t whole = OnnxPixelsAvx2(onnx_a_.data(), onnx_a_.size() == 1, onnx_b_, divisor_, flo_, fhi_, zp_, linear, a,
                                       bias, b, b_signed, b_zp, channels, pixels, out);
  const bool linear_done = linear != nullptr && whole > 0;  // whole channels written through the map
  if (whole < channels) {  // each pixel's last channels, as QuantizeChannels
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t j = whole; j < channels; ++j) {
        const int64_t i = p * channels + j;
        const int32_t acc = a[i] + (bias == nullptr ? 0 : bias[j]);
        const int32_t bv = b == nullptr ? 0 : (b_signed ? int32_t{static_cast<int8_t>(b[i])} : int32_t{b[i]}) - b_zp;
        out[i] = static_cast<uint8_t>(b == nullptr ? Quantize(acc, j) : Quantize(acc, bv, j));
      }
      if (linear_done) MapBytes(*byte_map_, out + p * channels + whole, channels - whole);
    }
  }
  // Without the linear form, the table once over the whole block.
  if (byte_map_ != nullptr && !linear_done) MapBytes(*byte_map_, out, pixels * channels);
  return pixels;
}

void OutputStage::SetByteMap(const ByteTable& map, ir::DataType mapped_type, float ratio) {
  byte_map_ = std::make_shared<const ByteTable>(map);
  mapped_type_ = mapped_type;
  linear_map_.reset();
  if (mode_ != numerics::RequantizeMode::kOnnx || output_type_ == ir::DataType::kFloat32 || zp_ < lo_ || zp_ > hi_) {
    return;
  }
  // The mapped value of stage integer r (the byte r + zp).
  const auto mapped = [&](int32_t r) {
    const uint8_t byte = map[static_cast<uint8_t>(r + zp_)];
    return mapped_type == ir::DataType::kInt8 ? int32_t{static_cast<int8_t>(byte)} : int32_t{byte};
  };
  LinearByteMap linear;
  linear.ratio = ratio;
  linear.zero_point = mapped(0);
  int32_t lo = mapped(lo_ - zp_), hi = lo;
  for (int32_t r = lo_ - zp_; r <= hi_ - zp_; ++r) {
    lo = std::min(lo, mapped(r));
    hi = std::max(hi, mapped(r));
  }
  linear.lo = static_cast<float>(lo - linear.zero_point);
  linear.hi = static_cast<float>(hi - linear.zero_point);
  for (int32_t r = lo_ - zp_; r <= hi_ - zp_; ++r) {
    const float f = numerics::ClampLikeMlas(static_cast<float>(r) * ratio, linear.lo, linear.hi);
    if (numerics::RoundHalfToEven(f) + linear.zero_point != mapped(r)) return;
  }
  linear_map_ = linear;
}

int64_t OutputStage::QuantizeRowSimd(const int32_t* a, int32_t bias, const uint8_t* b, bool b_signed, int32_t b_zp,
                                     int64_t c, int64_t n, uint8_t* out) const {
  const RequantizeIsa isa = CurrentRequantizeIsa();
  if (isa == RequantizeIsa::kScalar || output_type_ == ir::DataType::kFloat32) return 0;
  const size_t i = onnx_a_.size() == 1 ? 0 : static_cast<size_t>(c);
  if (mode_ == numerics::RequantizeMode::kOnnx) {
    const OnnxRow r{onnx_a_[i], onnx_b_, flo_, fhi_, zp_, divisor_};
    int64_t done = 0;
    if (isa == RequantizeIsa::kAvx512) done = OnnxRowAvx512(r, a, bias, b, b_signed, b_zp, n, out);
    if (n - done >= 8) {
      done += OnnxRowAvx2(r, a + done, bias, b == nullptr ? nullptr : b + done, b_signed, b_zp, n - done, out + done);
    }
    return done;
  }
  FixedRow r;
  r.a = Lanes(fixed_a_[i]);
  if (has_b_) r.b = Lanes(fixed_b_);
  r.zp = zp_;
  r.lo = lo_;
  r.hi = hi_;
  return FixedRowAvx2(r, a, bias, b, b_signed, b_zp, n, out);
}

std::optional<OutputStage::OnnxOneTermForm> OutputStage::OnnxOneTerm() const {
  if (mode_ != numerics::RequantizeMode::kOnnx || has_b_ || (byte_map_ != nullptr && !linear_map_.has_value()) ||
      (output_type_ != ir::DataType::kInt8 && output_type_ != ir::DataType::kUint8)) {
    return std::nullopt;
  }
  return OnnxOneTermForm{onnx_a_, divisor_, flo_, fhi_, zp_, linear_map_};
}

absl::StatusOr<OutputStage> OutputStage::Create(const OutputStageSpec& spec) {
  OutputStage s;
  s.mode_ = spec.mode;
  s.output_type_ = spec.output_type;
  s.has_b_ = spec.has_b;
  s.act_min_ = spec.act_min;
  s.act_max_ = spec.act_max;
  if (spec.a.weight_scales.empty() || (spec.has_b && spec.b.weight_scales.size() != 1)) {
    return absl::InvalidArgumentError("output stage: a term needs one or more scales, b exactly one");
  }
  for (float w : spec.a.weight_scales) s.dequant_a_.push_back(spec.a.input_scale * w);
  s.dequant_b_ = spec.b.input_scale;
  if (spec.output_type == ir::DataType::kFloat32) {
    s.onnx_a_.assign(spec.a.weight_scales.size(), 0.f);
    return s;
  }
  switch (spec.output_type) {
    case ir::DataType::kInt8: Bounds<int8_t>(spec, &s.lo_, &s.hi_); break;
    case ir::DataType::kUint8: Bounds<uint8_t>(spec, &s.lo_, &s.hi_); break;
    default:
      return absl::UnimplementedError(
          absl::StrCat("output type ", ir::DataTypeName(spec.output_type), "; expected INT8, UINT8 or FLOAT"));
  }
  if (s.lo_ > s.hi_) {
    return absl::InvalidArgumentError(absl::StrCat("activation bounds [", spec.act_min, ", ", spec.act_max, "] are empty"));
  }
  if (!(spec.output_scale > 0) || !std::isfinite(spec.output_scale)) {
    return absl::InvalidArgumentError(absl::StrCat("output scale ", spec.output_scale, " is not positive and finite"));
  }
  const bool signed_out = spec.output_type == ir::DataType::kInt8;
  if (spec.output_zero_point < (signed_out ? -128 : 0) || spec.output_zero_point > (signed_out ? 127 : 255)) {
    return absl::InvalidArgumentError(absl::StrCat("output zero point ", spec.output_zero_point, " lies outside ",
                                                   ir::DataTypeName(spec.output_type), "'s range"));
  }
  s.zp_ = spec.output_zero_point;
  s.output_scale_ = spec.output_scale;
  s.flo_ = static_cast<float>(s.lo_ - s.zp_);
  s.fhi_ = static_cast<float>(s.hi_ - s.zp_);
  const double extra = spec.has_b ? std::ldexp(1.0, kTwoTermFractionBits) : 1.0;
  for (size_t c = 0; c < spec.a.weight_scales.size(); ++c) {
    const float w = spec.a.weight_scales[c];
    s.onnx_a_.push_back(numerics::OnnxMultiplier(spec.a.input_scale, w, spec.output_scale));
    if (spec.mode == numerics::RequantizeMode::kFixed) {
      const double real = static_cast<double>(spec.a.input_scale) * w / spec.output_scale * extra;
      absl::StatusOr<numerics::FixedMultiplier> m = numerics::QuantizeMultiplier(real);
      if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat("channel ", c, ": ", m.status().message()));
      s.fixed_a_.push_back(*m);
    }
  }
  if (spec.dequantize_then_quantize && spec.mode == numerics::RequantizeMode::kOnnx) {
    s.onnx_a_ = s.dequant_a_;  // d_a[c] = float32(s_x * s_w[c])
    s.divisor_ = spec.output_scale;
  }
  if (spec.has_b) {
    s.onnx_b_ = s.divisor_ == 1.f ? spec.b.input_scale / spec.output_scale : spec.b.input_scale;
    if (spec.mode == numerics::RequantizeMode::kFixed) {
      absl::StatusOr<numerics::FixedMultiplier> m =
          numerics::QuantizeMultiplier(static_cast<double>(spec.b.input_scale) / spec.output_scale * extra);
      if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat("second input: ", m.status().message()));
      s.fixed_b_ = *m;
    }
  }
  return s;
}

}  // namespace qfuse::runtime::int8
