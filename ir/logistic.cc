#include "ir/logistic.h"

#include <immintrin.h>

namespace qfuse::ir {
namespace {

// Logistic of eight values (the header's steps, lane by lane).
__attribute__((target("avx2,fma"), always_inline)) inline __m256 Logistic8(__m256 x) {
  using C = LogisticConstants;
  __m256 v = _mm256_max_ps(_mm256_set1_ps(C::kLower), x);
  v = _mm256_min_ps(_mm256_set1_ps(C::kUpper), v);
  const __m256 x2 = _mm256_mul_ps(v, v);
  __m256 p = _mm256_fmadd_ps(x2, _mm256_set1_ps(C::kAlpha9), _mm256_set1_ps(C::kAlpha7));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(C::kAlpha5));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(C::kAlpha3));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(C::kAlpha1));
  p = _mm256_mul_ps(v, p);
  __m256 q = _mm256_fmadd_ps(x2, _mm256_set1_ps(C::kBeta10), _mm256_set1_ps(C::kBeta8));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(C::kBeta6));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(C::kBeta4));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(C::kBeta2));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(C::kBeta0));
  return _mm256_max_ps(_mm256_setzero_ps(), _mm256_add_ps(_mm256_div_ps(p, q), _mm256_set1_ps(0.5f)));
}

__attribute__((target("avx2,fma"))) int64_t LogisticRowAvx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Logistic8(_mm256_loadu_ps(x + i)));
  return i;
}

// x * Logistic(x), the product of the unclamped x (as the scalar form).
__attribute__((target("avx2,fma"))) int64_t SiluRowAvx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, Logistic8(v)));
  }
  return i;
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

void LogisticRow(const float* x, float* y, int64_t n, bool vector) {
  const int64_t done = vector && HasAvx2Fma() ? LogisticRowAvx2(x, y, n) : 0;
  for (int64_t i = done; i < n; ++i) y[i] = Logistic(x[i]);
}

void SiluRow(const float* x, float* y, int64_t n, bool vector) {
  const int64_t done = vector && HasAvx2Fma() ? SiluRowAvx2(x, y, n) : 0;
  for (int64_t i = done; i < n; ++i) y[i] = x[i] * Logistic(x[i]);
}

}  // namespace qfuse::ir
