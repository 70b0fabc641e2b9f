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

// Sixteen lanes of Erf: Erf8's operations in the same order, so the same bits.
__attribute__((target("avx512f,avx512dq,fma"))) __m512 Erf16(__m512 x) {
  using C = ErfConstants;
  const __m512 sign_mask = _mm512_set1_ps(-0.0f);
  const __m512 sign = _mm512_and_ps(x, sign_mask);
  const __m512 a = _mm512_min_ps(_mm512_andnot_ps(sign_mask, x), _mm512_set1_ps(C::kUpperAbs));
  const __m512 s = _mm512_mul_ps(a, a);
  __m512 p = _mm512_set1_ps(C::kSmall[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(C::kSmall[k]));
  const __m512 small = _mm512_fmadd_ps(p, a, a);
  __m512 q = _mm512_set1_ps(C::kBig[0]);
  for (int k = 1; k < 7; ++k) q = _mm512_fmadd_ps(q, a, _mm512_set1_ps(C::kBig[k]));
  q = _mm512_fmadd_ps(q, a, a);
  const __m512 e = _mm512_max_ps(_mm512_xor_ps(q, sign_mask), _mm512_set1_ps(C::kExpLower));
  const __m512 shift = _mm512_set1_ps(C::kRoundingShift);
  const __m512 t = _mm512_sub_ps(_mm512_fmadd_ps(_mm512_set1_ps(C::kLog2Reciprocal), e, shift), shift);
  __m512 f = _mm512_fmadd_ps(_mm512_set1_ps(C::kLn2Hi), t, e);
  f = _mm512_fmadd_ps(t, _mm512_set1_ps(C::kLn2Lo), f);
  __m512 y = _mm512_set1_ps(C::kExp[0]);
  for (int k = 1; k < 7; ++k) y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(C::kExp[k]));
  const __m512i scale = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(t), _mm512_set1_epi32(127)), 23);
  const __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(y, _mm512_castsi512_ps(scale)));
  const __mmask16 is_big = _mm512_cmp_ps_mask(a, _mm512_set1_ps(C::kSplit), _CMP_GT_OQ);
  return _mm512_or_ps(_mm512_mask_blend_ps(is_big, small, big), sign);
}

__attribute__((target("avx512f,avx512dq,fma"))) int64_t ErfRowAvx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Erf16(_mm512_loadu_ps(x + i)));
  return i;
}

__attribute__((target("avx512f,avx512dq,fma"))) int64_t GeluRowAvx512(const float* x, float* y, int64_t n) {
  const __m512 inv_sqrt2 = _mm512_set1_ps(kGeluInvSqrt2), half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 e = Erf16(_mm512_mul_ps(v, inv_sqrt2));
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(e, one)));
  }
  return i;
}

__attribute__((target("avx512f,avx512dq,fma"))) int64_t GeluChainRowAvx512(const float* x, float* y, int64_t n,
                                                                           float divisor, bool half_first) {
  const __m512 d = _mm512_set1_ps(divisor), half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 e = _mm512_add_ps(Erf16(_mm512_div_ps(v, d)), one);
    const __m512 r = half_first ? _mm512_mul_ps(_mm512_mul_ps(v, half), e) : _mm512_mul_ps(_mm512_mul_ps(v, e), half);
    _mm512_storeu_ps(y + i, r);
  }
  return i;
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("fma");
  return has;
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

void ErfRow(const float* x, float* y, int64_t n, bool vector, bool wide) {
  int64_t done = vector && wide && HasAvx512() ? ErfRowAvx512(x, y, n) : 0;
  if (vector && HasAvx2Fma()) done += ErfRowAvx2(x + done, y + done, n - done);
  for (int64_t i = done; i < n; ++i) y[i] = Erf(x[i]);
}

void GeluRow(const float* x, float* y, int64_t n, bool vector, bool wide) {
  int64_t done = vector && wide && HasAvx512() ? GeluRowAvx512(x, y, n) : 0;
  if (vector && HasAvx2Fma()) done += GeluRowAvx2(x + done, y + done, n - done);
  for (int64_t i = done; i < n; ++i) y[i] = Gelu(x[i]);
}

void GeluChainRow(const float* x, float* y, int64_t n, float divisor, bool half_first, bool vector, bool wide) {
  int64_t done = vector && wide && HasAvx512() ? GeluChainRowAvx512(x, y, n, divisor, half_first) : 0;
  if (vector && HasAvx2Fma()) done += GeluChainRowAvx2(x + done, y + done, n - done, divisor, half_first);
  for (int64_t i = done; i < n; ++i) y[i] = GeluChain(x[i], divisor, half_first);
}

}  // namespace qfuse::ir
