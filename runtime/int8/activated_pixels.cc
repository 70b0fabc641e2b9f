#include "runtime/int8/activated_pixels.h"

#include <immintrin.h>

#include "ir/logistic.h"
#include "runtime/cpu_isa.h"

namespace qfuse::runtime::int8 {
namespace {

// ir::Logistic of 16 values: ir/logistic.cc's Logistic8 step for step (the same fused
// multiply-adds, division and clamps), in 16 lanes.
__attribute__((target("avx512f"), always_inline)) inline __m512 Logistic16(__m512 x) {
  using C = ir::LogisticConstants;
  __m512 v = _mm512_max_ps(_mm512_set1_ps(C::kLower), x);
  v = _mm512_min_ps(_mm512_set1_ps(C::kUpper), v);
  const __m512 x2 = _mm512_mul_ps(v, v);
  __m512 p = _mm512_fmadd_ps(x2, _mm512_set1_ps(C::kAlpha9), _mm512_set1_ps(C::kAlpha7));
  p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(C::kAlpha5));
  p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(C::kAlpha3));
  p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(C::kAlpha1));
  p = _mm512_mul_ps(v, p);
  __m512 q = _mm512_fmadd_ps(x2, _mm512_set1_ps(C::kBeta10), _mm512_set1_ps(C::kBeta8));
  q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(C::kBeta6));
  q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(C::kBeta4));
  q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(C::kBeta2));
  q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(C::kBeta0));
  return _mm512_max_ps(_mm512_setzero_ps(), _mm512_add_ps(_mm512_div_ps(p, q), _mm512_set1_ps(0.5f)));
}

template <ir::UnitActivation kActivation, bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void Run(const ActivatedPixelsArgs& r) {
  const __m512i vbzp = _mm512_set1_epi32(r.b_zero_point), vzp = _mm512_set1_epi32(r.output_zero_point);
  const __m512 vdb = _mm512_set1_ps(r.dequant_b), act_lo = _mm512_set1_ps(r.act_min),
               act_hi = _mm512_set1_ps(r.act_max);
  const __m512 one = _mm512_set1_ps(1.f), zero = _mm512_setzero_ps();
  // HardSwish's slope and offset are fixed; HardSigmoid's and LeakyRelu's are the spec's.
  const bool swish = kActivation == ir::UnitActivation::kHardSwish;
  const __m512 alpha = _mm512_set1_ps(swish ? ir::kHardSwishAlpha : r.activation.alpha);
  const __m512 beta = _mm512_set1_ps(swish ? 0.5f : r.activation.beta);
  const __m512 scale = _mm512_set1_ps(r.output_scale);
  constexpr int32_t kMin = kSigned ? -128 : 0, kMax = kSigned ? 127 : 255;
  const __m512 q_lo = _mm512_set1_ps(static_cast<float>(kMin - r.output_zero_point));
  const __m512 q_hi = _mm512_set1_ps(static_cast<float>(kMax - r.output_zero_point));
  // Locals, not r's fields: stores through the byte pointer out may alias anything.
  const int32_t* const a = r.a;
  const int32_t* const bias = r.bias;
  const uint8_t* const b = r.b;
  const bool b_signed = r.b_signed;
  const float* const da = r.dequant_a;
  const bool da_per_tensor = r.dequant_a_per_tensor;
  const int64_t channels = r.channels, pixels = r.pixels;
  uint8_t* const out = r.out;
  // 16 channels from channel j of the pixel at `at`; `m` masks the pixel's last group (a
  // constant all-ones mask makes plain loads and stores).
  const auto step = [&](int64_t at, int64_t j, __mmask16 m)
      __attribute__((always_inline, target("avx512f,avx512bw,avx512vl"))) {
    // DequantizePixels: float32(a + bias) * d[c] [+ float32(b - b_zp) * d_b], then the bounds.
    __m512i va = _mm512_maskz_loadu_epi32(m, a + at + j);
    if (bias != nullptr) va = _mm512_add_epi32(va, _mm512_maskz_loadu_epi32(m, bias + j));
    const __m512 d = da_per_tensor ? _mm512_set1_ps(da[0]) : _mm512_maskz_loadu_ps(m, da + j);
    __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(va), d);
    if (b != nullptr) {
      const __m128i bv = _mm_maskz_loadu_epi8(m, b + at + j);
      const __m512i vb = _mm512_sub_epi32(b_signed ? _mm512_cvtepi8_epi32(bv) : _mm512_cvtepu8_epi32(bv), vbzp);
      x = _mm512_add_ps(x, _mm512_mul_ps(_mm512_cvtepi32_ps(vb), vdb));
    }
    x = _mm512_min_ps(_mm512_max_ps(x, act_lo), act_hi);
    // ir::ApplyUnitActivation's vector steps.
    if constexpr (kActivation == ir::UnitActivation::kSigmoid) {
      x = Logistic16(x);
    } else if constexpr (kActivation == ir::UnitActivation::kSilu) {
      x = _mm512_mul_ps(x, Logistic16(x));  // the unclamped x, as ir::SiluRow
    } else if constexpr (kActivation == ir::UnitActivation::kLeakyRelu) {
      x = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), alpha, x);
    } else {
      const __m512 gate = _mm512_max_ps(_mm512_min_ps(_mm512_add_ps(_mm512_mul_ps(x, alpha), beta), one), zero);
      x = kActivation == ir::UnitActivation::kHardSwish ? _mm512_mul_ps(x, gate) : gate;
    }
    // QuantizeLinear: the division, MAXPS / MINPS to the type's range, round half to even;
    // the bytes packed in a register, then stored (vpmovdb's masked store form is slow).
    const __m512 f = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(x, scale), q_lo), q_hi);
    const __m128i q = _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), vzp));
    if (m == 0xFFFF) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + at + j), q);
    } else {
      _mm_mask_storeu_epi8(out + at + j, m, q);
    }
  };
  const int64_t whole = channels / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (channels - whole)) - 1u);
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t at = p * channels;
    for (int64_t j = 0; j < whole; j += 16) step(at, j, 0xFFFF);
    if (whole < channels) step(at, whole, tail);
  }
}

template <ir::UnitActivation kActivation>
void RunTyped(const ActivatedPixelsArgs& args) {
  args.out_signed ? Run<kActivation, true>(args) : Run<kActivation, false>(args);
}

}  // namespace

bool ActivatePixelsInOnePass(const ActivatedPixelsArgs& args) {
  if (!IsaAllowed(Isa::kAvx512)) return false;
  switch (args.activation.activation) {
    case ir::UnitActivation::kHardSwish:
      RunTyped<ir::UnitActivation::kHardSwish>(args);
      return true;
    case ir::UnitActivation::kHardSigmoid:
      RunTyped<ir::UnitActivation::kHardSigmoid>(args);
      return true;
    case ir::UnitActivation::kLeakyRelu:
      RunTyped<ir::UnitActivation::kLeakyRelu>(args);
      return true;
    case ir::UnitActivation::kSigmoid:
      RunTyped<ir::UnitActivation::kSigmoid>(args);
      return true;
    case ir::UnitActivation::kSilu:
      RunTyped<ir::UnitActivation::kSilu>(args);
      return true;
    default:
      return false;
  }
}

}  // namespace qfuse::runtime::int8
