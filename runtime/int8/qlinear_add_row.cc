#include "runtime/int8/qlinear_add_row.h"

#include <immintrin.h>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::int8 {
namespace {

// Eight bytes at p as floats, sign- or zero-extended.
__attribute__((target("avx2,fma"))) inline __m256 LoadEight(const uint8_t* p, bool is_signed) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes));
}

__attribute__((target("avx2,fma"))) int64_t AddRowAvx2(const OnnxAddRow& p, const uint8_t* a, const uint8_t* b,
                                                       int64_t n, uint8_t* y) {
  const __m256 ra = _mm256_set1_ps(p.m.ra), rb = _mm256_set1_ps(p.m.rb), fixed = _mm256_set1_ps(p.m.fixed);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(p.qmin)), hi = _mm256_set1_ps(static_cast<float>(p.qmax));
  const bool clamp = p.clamp.has_value();
  const OnnxAddRow::Clamp k = clamp ? *p.clamp : OnnxAddRow::Clamp{};
  const __m256i in_zp = _mm256_set1_epi32(k.in_zero_point), out_zp = _mm256_set1_epi32(k.out_zero_point);
  const __m256 in_scale = _mm256_set1_ps(k.in_scale), out_scale = _mm256_set1_ps(k.out_scale);
  const __m256 clamp_lo = _mm256_set1_ps(k.lo), clamp_hi = _mm256_set1_ps(k.hi);
  const __m256 out_lo = _mm256_set1_ps(static_cast<float>(k.out_min - k.out_zero_point));
  const __m256 out_hi = _mm256_set1_ps(static_cast<float>(k.out_max - k.out_zero_point));
  const bool out_signed = clamp ? k.out_min < 0 : p.qmin < 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 c =
        _mm256_fmadd_ps(LoadEight(a + i, p.a_signed), ra, _mm256_fmadd_ps(LoadEight(b + i, p.b_signed), rb, fixed));
    // MAXPS(c, lo) then MINPS(., hi): a NaN c gives lo, as numerics::ClampLikeMlas.
    const __m256 clamped = _mm256_min_ps(_mm256_max_ps(c, lo), hi);
    __m256i q = _mm256_cvtps_epi32(clamped);  // round half to even (default MXCSR)
    if (clamp) {                              // DequantizeLinear, clamp, QuantizeLinear (numerics::QuantizeLinear)
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, in_zp)), in_scale);
      f = _mm256_min_ps(_mm256_max_ps(f, clamp_lo), clamp_hi);
      const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(f, out_scale), out_lo), out_hi);
      q = _mm256_add_epi32(_mm256_cvtps_epi32(v), out_zp);
    }
    // In range already: the packs do not saturate.
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i q8 = out_signed ? _mm_packs_epi16(q16, q16) : _mm_packus_epi16(q16, q16);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), q8);
  }
  return i;
}

}  // namespace

int64_t OnnxQLinearAddRowAvx2(const OnnxAddRow& p, const uint8_t* a, const uint8_t* b, int64_t n, uint8_t* y) {
  if (!IsaAllowed(Isa::kAvx2)) return 0;
  return AddRowAvx2(p, a, b, n, y);
}

}  // namespace qfuse::runtime::int8
