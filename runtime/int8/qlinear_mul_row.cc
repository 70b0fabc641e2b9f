#include "runtime/int8/qlinear_mul_row.h"

#include <immintrin.h>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::int8 {
namespace {

// Eight bytes at p as int32, sign- or zero-extended, less `zero_point`.
__attribute__((target("avx2"))) inline __m256i LoadCentred(const uint8_t* p, bool is_signed, __m256i zero_point) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_sub_epi32(is_signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes), zero_point);
}

// target avx2 without fma: the product and the sum stay two roundings.
__attribute__((target("avx2"))) int64_t MulRowAvx2(const OnnxMulRow& p, const uint8_t* a, const uint8_t* b, int64_t n,
                                                   uint8_t* y) {
  const __m256i za = _mm256_set1_epi32(p.a_zero_point), zb = _mm256_set1_epi32(p.b_zero_point);
  const __m256 ratio = _mm256_set1_ps(p.ratio), zc = _mm256_set1_ps(static_cast<float>(p.c_zero_point));
  const __m256i lo = _mm256_set1_epi32(p.qmin), hi = _mm256_set1_epi32(p.qmax);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i product = _mm256_mullo_epi32(LoadCentred(a + i, p.a_signed, za), LoadCentred(b + i, p.b_signed, zb));
    const __m256 f = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(product), ratio), zc);
    // Round half to even (default MXCSR); out of int32 range (or NaN) gives INT32_MIN, as
    // numerics::OnnxQLinearMul, which the clamp then takes to qmin.
    const __m256i q = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(f), lo), hi);
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i q8 = p.qmin < 0 ? _mm_packs_epi16(q16, q16) : _mm_packus_epi16(q16, q16);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), q8);
  }
  return i;
}

}  // namespace

int64_t OnnxQLinearMulRowAvx2(const OnnxMulRow& p, const uint8_t* a, const uint8_t* b, int64_t n, uint8_t* y) {
  if (!IsaAllowed(Isa::kAvx2)) return 0;
  return MulRowAvx2(p, a, b, n, y);
}

}  // namespace qfuse::runtime::int8
