#include "runtime/kernels/quant/quantize_row.h"

#include <immintrin.h>

#include <limits>

#include "numerics/requantize.h"
#include "runtime/cpu_isa.h"

namespace qfuse::runtime::kernels::quant {
namespace {

// QuantizeLinearRow with AVX2, 32 values at a time (see the header). Returns how many it
// wrote; the caller finishes the rest.
template <typename T>
__attribute__((target("avx2"))) int64_t QuantizeRunAvx2(const float* x, int64_t n, float scale, int32_t zero_point,
                                                        T* y) {
  constexpr int32_t kMin = std::numeric_limits<T>::lowest(), kMax = std::numeric_limits<T>::max();
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(kMin - zero_point));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(kMax - zero_point));
  const __m256i vzp = _mm256_set1_epi32(zero_point), low_byte = _mm256_set1_epi16(0xff);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const auto quantize8 = [&](const float* p) __attribute__((always_inline, target("avx2"))) {
    const __m256 f = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(_mm256_loadu_ps(p), vscale), lo), hi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(f), vzp);
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    // Results lie in T's range, so packing to int16 saturates nothing and the int16 lanes'
    // low bytes are T's bytes; vpermd undoes the packs' 128-bit interleave.
    const __m256i q01 = _mm256_packs_epi32(quantize8(x + i), quantize8(x + i + 8));
    const __m256i q23 = _mm256_packs_epi32(quantize8(x + i + 16), quantize8(x + i + 24));
    const __m256i bytes = _mm256_packus_epi16(_mm256_and_si256(q01, low_byte), _mm256_and_si256(q23, low_byte));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  return i;
}

}  // namespace

template <typename T>
void QuantizeLinearRow(const float* x, int64_t n, float scale, int32_t zero_point, T* out, bool vector) {
  int64_t i = vector && IsaAllowed(Isa::kAvx2) ? QuantizeRunAvx2(x, n, scale, zero_point, out) : 0;
  for (; i < n; ++i) out[i] = numerics::QuantizeLinear<T>(x[i], scale, zero_point);
}

template void QuantizeLinearRow<int8_t>(const float*, int64_t, float, int32_t, int8_t*, bool);
template void QuantizeLinearRow<uint8_t>(const float*, int64_t, float, int32_t, uint8_t*, bool);

}  // namespace qfuse::runtime::kernels::quant
