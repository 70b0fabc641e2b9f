#include "runtime/int8/channel_map_row.h"

#include <immintrin.h>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::int8 {
namespace {

// The steps on 16 lanes. This file is built with -ffp-contract=off: the affine's product and
// sum stay two roundings. Each max / min keeps the scalar form's NaN and signed-zero result:
// MAXPS(a, b) is a > b ? a : b, MINPS(a, b) is a < b ? a : b.
__attribute__((target("avx512f,avx512bw"))) int64_t RowAvx512(const ChannelMapRow& p, const uint8_t* x, int64_t n,
                                                              uint8_t* y) {
  const __m512i x_zp = _mm512_set1_epi32(p.x_zero_point), y_zp = _mm512_set1_epi32(p.y_zero_point);
  const __m512 x_scale = _mm512_set1_ps(p.x_scale), scale = _mm512_set1_ps(p.scale), shift = _mm512_set1_ps(p.shift);
  const __m512 clip_lo = _mm512_set1_ps(p.clip_min), clip_hi = _mm512_set1_ps(p.clip_max);
  const __m512 y_scale = _mm512_set1_ps(p.y_scale), zero = _mm512_setzero_ps();
  const int32_t q_min = p.y_signed ? -128 : 0, q_max = p.y_signed ? 127 : 255;
  const __m512 q_lo = _mm512_set1_ps(static_cast<float>(q_min - p.y_zero_point));
  const __m512 q_hi = _mm512_set1_ps(static_cast<float>(q_max - p.y_zero_point));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m512i q = p.x_signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
    const __m512 d = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(q, x_zp)), x_scale);
    __m512 a = _mm512_add_ps(_mm512_mul_ps(d, scale), shift);
    if (p.clamp == ChannelMapRow::Clamp::kRelu) {
      a = _mm512_max_ps(a, zero);  // a > 0 ? a : 0
    } else if (p.clamp == ChannelMapRow::Clamp::kClip) {
      a = _mm512_min_ps(clip_hi, _mm512_max_ps(clip_lo, a));  // std::min(std::max(a, lo), hi)
    }
    const __m512 f = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(a, y_scale), q_lo), q_hi);  // ClampLikeMlas
    const __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(f), y_zp);  // half to even (default MXCSR)
    // In range already: the narrowing does not saturate.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     p.y_signed ? _mm512_cvtsepi32_epi8(r) : _mm512_cvtusepi32_epi8(r));
  }
  return i;
}

__attribute__((target("avx2"))) int64_t RowAvx2(const ChannelMapRow& p, const uint8_t* x, int64_t n, uint8_t* y) {
  const __m256i x_zp = _mm256_set1_epi32(p.x_zero_point), y_zp = _mm256_set1_epi32(p.y_zero_point);
  const __m256 x_scale = _mm256_set1_ps(p.x_scale), scale = _mm256_set1_ps(p.scale), shift = _mm256_set1_ps(p.shift);
  const __m256 clip_lo = _mm256_set1_ps(p.clip_min), clip_hi = _mm256_set1_ps(p.clip_max);
  const __m256 y_scale = _mm256_set1_ps(p.y_scale), zero = _mm256_setzero_ps();
  const int32_t q_min = p.y_signed ? -128 : 0, q_max = p.y_signed ? 127 : 255;
  const __m256 q_lo = _mm256_set1_ps(static_cast<float>(q_min - p.y_zero_point));
  const __m256 q_hi = _mm256_set1_ps(static_cast<float>(q_max - p.y_zero_point));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i));
    const __m256i q = p.x_signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
    const __m256 d = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, x_zp)), x_scale);
    __m256 a = _mm256_add_ps(_mm256_mul_ps(d, scale), shift);
    if (p.clamp == ChannelMapRow::Clamp::kRelu) {
      a = _mm256_max_ps(a, zero);
    } else if (p.clamp == ChannelMapRow::Clamp::kClip) {
      a = _mm256_min_ps(clip_hi, _mm256_max_ps(clip_lo, a));
    }
    const __m256 f = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(a, y_scale), q_lo), q_hi);
    const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(f), y_zp);
    const __m128i r16 = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i),
                     p.y_signed ? _mm_packs_epi16(r16, r16) : _mm_packus_epi16(r16, r16));
  }
  return i;
}

}  // namespace

int64_t ChannelMapRowSimd(const ChannelMapRow& p, const uint8_t* x, int64_t n, uint8_t* y) {
  if (IsaAllowed(Isa::kAvx512)) return RowAvx512(p, x, n, y);
  if (IsaAllowed(Isa::kAvx2)) return RowAvx2(p, x, n, y);
  return 0;
}

}  // namespace qfuse::runtime::int8
