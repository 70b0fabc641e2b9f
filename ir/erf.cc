#include "ir/erf.h"

#include <immintrin.h>

namespace qfuse::ir {
namespace {

// Eight lanes of Erf: both branches on every lane, each lane then taking its own.
__attribute__((target("avx2,fma"))) __m256 Erf8(__m256 x) {
  using C = ErfConstants;
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 sign = _mm256_and_ps(x, sign_mask);
  const __m256 a = _mm256_min_ps(_mm256_andnot_ps(sign_mask, x), _mm256_set1_ps(C::kUpperAbs));
  // a <= split.
  const __m256 s = _mm256_mul_ps(a, a);
  __m256 p = _mm256_set1_ps(C::kSmall[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(C::kSmall[k]));
  const __m256 small = _mm256_fmadd_ps(p, a, a);
  // a > split.
  __m256 q = _mm256_set1_ps(C::kBig[0]);
  for (int k = 1; k < 7; ++k) q = _mm256_fmadd_ps(q, a, _mm256_set1_ps(C::kBig[k]));
  q = _mm256_fmadd_ps(q, a, a);
  const __m256 e = _mm256_max_ps(_mm256_xor_ps(q, sign_mask), _mm256_set1_ps(C::kExpLower));
  const __m256 shift = _mm256_set1_ps(C::kRoundingShift);
  const __m256 t = _mm256_sub_ps(_mm256_fmadd_ps(_mm256_set1_ps(C::kLog2Reciprocal), e, shift), shift);
  __m256 f = _mm256_fmadd_ps(_mm256_set1_ps(C::kLn2Hi), t, e);
  f = _mm256_fmadd_ps(t, _mm256_set1_ps(C::kLn2Lo), f);
  __m256 y = _mm256_set1_ps(C::kExp[0]);
  for (int k = 1; k < 7; ++k) y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(C::kExp[k]));
  const __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(t), _mm256_set1_epi32(127)), 23);
  const __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(y, _mm256_castsi256_ps(scale)));
  const __m256 is_big = _mm256_cmp_ps(a, _mm256_set1_ps(C::kSplit), _CMP_GT_OQ);
  return _mm256_or_ps(_mm256_blendv_ps(small, big, is_big), sign);
}

__attribute__((target("avx2,fma"))) int64_t ErfRowAvx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Erf8(_mm256_loadu_ps(x + i)));
  return i;
}

__attribute__((target("avx2,fma"))) int64_t GeluRowAvx2(const float* x, float* y, int64_t n) {
  const __m256 inv_sqrt2 = _mm256_set1_ps(kGeluInvSqrt2), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 e = Erf8(_mm256_mul_ps(v, inv_sqrt2));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(e, one)));
  }
  return i;
}

__attribute__((target("avx2,fma"))) int64_t GeluChainRowAvx2(const float* x, float* y, int64_t n, float divisor,
                                                              bool half_first) {
  const __m256 d = _mm256_set1_ps(divisor), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 e = _mm256_add_ps(Erf8(_mm256_div_ps(v, d)), one);
    const __m256 r = half_first ? _mm256_mul_ps(_mm256_mul_ps(v, half), e) : _mm256_mul_ps(_mm256_mul_ps(v, e), half);
    _mm256_storeu_ps(y + i, r);
  }
  return i;
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

void ErfRow(const float* x, float* y, int64_t n, bool vector) {
  const int64_t done = vector && HasAvx2Fma() ? ErfRowAvx2(x, y, n) : 0;
  for (int64_t i = done; i < n; ++i) y[i] = Erf(x[i]);
}

void GeluRow(const float* x, float* y, int64_t n, bool vector) {
  const int64_t done = vector && HasAvx2Fma() ? GeluRowAvx2(x, y, n) : 0;
  for (int64_t i = done; i < n; ++i) y[i] = Gelu(x[i]);
}

void GeluChainRow(const float* x, float* y, int64_t n, float divisor, bool half_first, bool vector) {
  const int64_t done = vector && HasAvx2Fma() ? GeluChainRowAvx2(x, y, n, divisor, half_first) : 0;
  for (int64_t i = done; i < n; ++i) y[i] = GeluChain(x[i], divisor, half_first);
}

}  // namespace qfuse::ir
