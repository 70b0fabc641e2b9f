#include "runtime/kernels/quant/requantize_row.h"

#include <immintrin.h>

#include <limits>
#include <type_traits>

#include "numerics/requantize.h"
#include "runtime/cpu_isa.h"

namespace qfuse::runtime::kernels::quant {
namespace {

// The first multiple of 8 values of the row; returns how many it wrote.
template <typename T>
__attribute__((target("avx2"))) int64_t RowAvx2(const int32_t* acc, int64_t n, float multiplier, int32_t zero_point,
                                                T* out) {
  constexpr int32_t kMin = std::numeric_limits<T>::lowest(), kMax = std::numeric_limits<T>::max();
  const __m256 m = _mm256_set1_ps(multiplier);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(kMin - zero_point));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(kMax - zero_point));
  const __m256i zp = _mm256_set1_epi32(zero_point);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i))), m);
    f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);  // ClampLikeMlas: max(f, lo) keeps lo for a NaN f
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), zp);
    // The values lie in T's range: saturating packs keep them, the low 8 bytes are the row's.
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i bytes = std::is_signed<T>::value ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), bytes);
  }
  return i;
}

}  // namespace

template <typename T>
void RequantizeOnnxRowFast(const int32_t* acc, int64_t n, float multiplier, int32_t zero_point, T* out, bool vector) {
  int64_t i = 0;
  if (vector && IsaAllowed(Isa::kAvx2)) i = RowAvx2(acc, n, multiplier, zero_point, out);
  for (; i < n; ++i) out[i] = numerics::RequantizeOnnx<T>(acc[i], multiplier, zero_point);
}

template void RequantizeOnnxRowFast<int8_t>(const int32_t*, int64_t, float, int32_t, int8_t*, bool);
template void RequantizeOnnxRowFast<uint8_t>(const int32_t*, int64_t, float, int32_t, uint8_t*, bool);

}  // namespace qfuse::runtime::kernels::quant
