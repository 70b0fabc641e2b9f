// The logistic function sigmoid(x) = 1 / (1 + exp(-x)) in float32 as onnxruntime's x86 CPU
// kernel computes it (MlasLogisticKernelFma3, what its Sigmoid runs on every x86 CPU with AVX2
// and FMA): Eigen's rational approximation on x clamped to [-18, 18],
//     x2 = x * x
//     p  = fma(fma(fma(fma(x2, a9, a7), x2, a5), x2, a3), x2, a1) * x
//     q  = fma(fma(fma(fma(fma(x2, b10, b8), x2, b6), x2, b4), x2, b2), x2, b0)
//     y  = max(p / q + 0.5, 0)
// with fused multiply-adds (one rounding each) and no clamp at 1; the clamps and the max pass a
// NaN through. Within 2e-7 of the exact logistic (tests/ir/logistic_test.cc). qfuse's Sigmoid
// kernel and the units' Sigmoid and SiLU activations use it, so a Sigmoid between DequantizeLinear
// and QuantizeLinear rounds as in onnxruntime.
#ifndef QFUSE_IR_LOGISTIC_H_
#define QFUSE_IR_LOGISTIC_H_

#include <cmath>
#include <cstdint>

namespace qfuse::ir {

struct LogisticConstants {
  static constexpr float kLower = -18.0f, kUpper = 18.0f;
  static constexpr float kAlpha9 = 4.37031012579801e-11f, kAlpha7 = 1.15627324459942e-07f,
                         kAlpha5 = 6.08574864600143e-05f, kAlpha3 = 8.51377133304701e-03f,
                         kAlpha1 = 2.48287947061529e-01f;
  static constexpr float kBeta10 = 6.10247389755681e-13f, kBeta8 = 5.76102136993427e-09f,
                         kBeta6 = 6.29106785017040e-06f, kBeta4 = 1.70198817374094e-03f,
                         kBeta2 = 1.16817656904453e-01f, kBeta0 = 9.93151921023180e-01f;
};

// One value (std::fma: the FMA instruction where the CPU has it, glibc's exact fma otherwise).
inline float Logistic(float x) {
  using C = LogisticConstants;
  float v = C::kLower > x ? C::kLower : x;  // MAXPS(lower, x): x when NaN
  v = C::kUpper < v ? C::kUpper : v;        // MINPS(upper, v)
  const float x2 = v * v;
  float p = std::fma(x2, C::kAlpha9, C::kAlpha7);
  p = std::fma(x2, p, C::kAlpha5);
  p = std::fma(x2, p, C::kAlpha3);
  p = std::fma(x2, p, C::kAlpha1);
  p = v * p;
  float q = std::fma(x2, C::kBeta10, C::kBeta8);
  q = std::fma(x2, q, C::kBeta6);
  q = std::fma(x2, q, C::kBeta4);
  q = std::fma(x2, q, C::kBeta2);
  q = std::fma(x2, q, C::kBeta0);
  const float y = p / q + 0.5f;
  return 0.f > y ? 0.f : y;  // MAXPS(0, y)
}

// y[i] = Logistic(x[i]) for i < n (x == y allowed): AVX2 + FMA lanes where `vector` (the
// caller's ISA cap allows AVX2) and the CPU has them (the same bytes), else one value at a time.
void LogisticRow(const float* x, float* y, int64_t n, bool vector);
// y[i] = x[i] * Logistic(x[i]) for i < n (SiLU; x == y allowed), the same way.
void SiluRow(const float* x, float* y, int64_t n, bool vector);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_LOGISTIC_H_
