// The error function erf(x) in float32 as onnxruntime's x86 CPU kernel computes it
// (MlasErfKernelFma3, what its Erf runs on every x86 CPU with AVX2 and FMA). On a = |x|
// clamped to 3.925 (a NaN becomes 3.925):
//   a <= 0.921875:  s = a * a; p = ((((s0 * s + s1) * s + s2) * s + s3) * s + s4) * s + s5;
//                   r = p * a + a
//   a >  0.921875:  q = (((((b0 * a + b1) * a + b2) * a + b3) * a + b4) * a + b5) * a + b6;
//                   q = q * a + a;  r = 1 - exp(-q)
// with every "u * v + w" one fused multiply-add, and exp(e) for e = max(-q, -88.376) as
// t = round(e / ln 2) (the 1.5 * 2^23 trick: fma(1/ln2, e, C) - C), f = e - t * ln2 in two
// fused steps (hi and lo parts), a degree-6 polynomial in f by fused multiply-adds, times 2^t
// built from the exponent bits. The result takes x's sign bit. Within 1.2e-7 of the exact
// erf (tests/ir/erf_test.cc). qfuse's float Erf kernel uses it, so an Erf between
// DequantizeLinear and QuantizeLinear rounds as in onnxruntime (onnxruntime 1.30 gives these
// bits on 2^20 values, models/zoo/erf_probe.py; older releases clamped a at 3.725).
#ifndef QFUSE_IR_ERF_H_
#define QFUSE_IR_ERF_H_

#include <cmath>
#include <cstdint>
#include <cstring>

namespace qfuse::ir {

struct ErfConstants {
  static constexpr float kUpperAbs = 3.925f, kSplit = 0.921875f;
  static constexpr float kSmall[6] = {-5.99104969e-4f, 4.99339588e-3f, -2.67667342e-2f,
                                      1.12818025e-1f,  -3.76124859e-1f, 1.28379151e-1f};
  static constexpr float kBig[7] = {1.72948930e-5f, -3.83208680e-4f, 3.88393435e-3f, -2.42545605e-2f,
                                    1.06777847e-1f, 6.34846687e-1f,  1.28717512e-1f};
  static constexpr float kExpLower = -88.3762626647949f, kLog2Reciprocal = 1.44269504088896341f;
  static constexpr float kLn2Hi = -6.93145752e-1f, kLn2Lo = -1.42860677e-6f;
  static constexpr float kExp[7] = {1.38319808e-3f, 8.37550033e-3f, 4.16689515e-2f, 1.66664466e-1f,
                                    4.99999851e-1f, 1.0f,           1.0f};
  static constexpr float kRoundingShift = 1.25829120e+7f;  // 1.5 * 2^23
};

// One value (std::fma: the FMA instruction where the CPU has it, glibc's exact fma otherwise).
inline float Erf(float x) {
  using C = ErfConstants;
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint32_t sign = bits & 0x80000000u;
  const uint32_t abs_bits = bits & 0x7fffffffu;
  float a;
  std::memcpy(&a, &abs_bits, 4);
  a = a < C::kUpperAbs ? a : C::kUpperAbs;  // MINPS(a, upper): upper when NaN
  float r;
  if (a > C::kSplit) {
    float q = C::kBig[0];
    for (int k = 1; k < 7; ++k) q = std::fma(q, a, C::kBig[k]);
    q = std::fma(q, a, a);
    float e = -q;
    e = e > C::kExpLower ? e : C::kExpLower;  // MAXPS(e, lower)
    const float t = std::fma(C::kLog2Reciprocal, e, C::kRoundingShift) - C::kRoundingShift;
    float f = std::fma(C::kLn2Hi, t, e);
    f = std::fma(t, C::kLn2Lo, f);
    float y = C::kExp[0];
    for (int k = 1; k < 7; ++k) y = std::fma(y, f, C::kExp[k]);
    const uint32_t scale_bits = static_cast<uint32_t>(static_cast<int32_t>(t) + 127) << 23;
    float scale;
    std::memcpy(&scale, &scale_bits, 4);
    r = 1.0f - y * scale;
  } else {
    const float s = a * a;
    float p = C::kSmall[0];
    for (int k = 1; k < 6; ++k) p = std::fma(p, s, C::kSmall[k]);
    r = std::fma(p, a, a);
  }
  uint32_t r_bits;
  std::memcpy(&r_bits, &r, 4);
  r_bits |= sign;
  std::memcpy(&r, &r_bits, 4);
  return r;
}

// GELU as onnxruntime's fused Gelu computes it (com.microsoft.Gelu, made by its GeluFusion of
// Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5): (0.5 * x) * (Erf(x * 0.70710678) + 1),
// each step rounded to float32. The product with 1/sqrt(2) is where it differs from the
// unfused chain, which divides by sqrt(2).
inline constexpr float kGeluInvSqrt2 = 0.70710678118654752440f;
inline float Gelu(float x) { return (0.5f * x) * (Erf(x * kGeluInvSqrt2) + 1.0f); }
// The unfused chain in one pass, each op rounded as on its own: e = Erf(x / divisor) + 1, then
// (x * 0.5) * e when half_first, else (x * e) * 0.5.
inline float GeluChain(float x, float divisor, bool half_first) {
  const float e = Erf(x / divisor) + 1.0f;
  return half_first ? (x * 0.5f) * e : (x * e) * 0.5f;
}

// y[i] = Erf(x[i]) for i < n (x == y allowed): AVX2 + FMA lanes where the CPU has them and
// `vector` is true, sixteen AVX-512 lanes first where it has AVX-512F/DQ and `wide` is also
// true (the same bytes either way: the same operations per lane), else one value at a time.
void ErfRow(const float* x, float* y, int64_t n, bool vector = true, bool wide = false);
// y[i] = Gelu(x[i]), the same way.
void GeluRow(const float* x, float* y, int64_t n, bool vector = true, bool wide = false);
// y[i] = GeluChain(x[i], divisor, half_first), the same way.
void GeluChainRow(const float* x, float* y, int64_t n, float divisor, bool half_first, bool vector = true,
                  bool wide = false);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_ERF_H_
