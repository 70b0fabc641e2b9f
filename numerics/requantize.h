// Integer quantization arithmetic: float <-> int8/uint8 (QuantizeLinear / Dequantize),
// int32 accumulator -> int8/uint8 requantization in two documented modes, and the int32
// accumulator overflow bound. Pure functions, no allocation.
//
// Notation: qmin/qmax are the limits of the output type T (int8: -128/127, uint8: 0/255);
// clamp(v, lo, hi) = min(max(v, lo), hi); "saturate" clamps to [qmin, qmax].
//
// QuantizeLinear (ONNX QuantizeLinear-10/13, onnxruntime MlasQuantizeLinear):
//     f = x / scale                                  float32 division (not x * (1/scale))
//     f = clamp(f, qmin - zp, qmax - zp)             in float32; NaN goes to qmin - zp
//     q = round_half_to_even(f) + zp                 so q is already in [qmin, qmax]
//   Clamping before rounding equals rounding then saturating, because the bounds are
//   integers. Rounding uses the current FP rounding mode, which must be the default
//   round-to-nearest-even (as MLAS assumes).
//
// Dequantize (ONNX DequantizeLinear):  y = float32(q - zp) * scale, one float32 product
//   (q - zp is exact in int64; its conversion to float32 rounds only beyond 2^24).
//
// Requantize, mode kOnnx (onnxruntime MlasRequantizeOutput, used by its x86 QLinearConv /
// QLinearMatMul; the float multiplier is OnnxMultiplier(in, w, out) = in * w / out, two
// float32 operations in that order, exactly as onnxruntime computes it):
//     f = float32(acc) * multiplier     int32 -> float32 rounds half-even for |acc| > 2^24;
//                                       one float32 multiply (never double, never FMA)
//     f = clamp(f, qmin - zp, qmax - zp)
//     q = round_half_to_even(f) + zp
//   Ties: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2 (before + zp).
//
// Requantize, mode kFixed (gemmlowp / TFLite integer-only; no floating point at run time):
//   A real multiplier r > 0 is encoded by QuantizeMultiplier as r ~= M * 2^(shift - 31)
//   with M in [2^30, 2^31) (Q31 mantissa in [0.5, 1)), rounded half away from zero.
//   Then, with left = max(shift, 0) and right = max(-shift, 0):
//     x = saturate_int32(acc * 2^left)                        (TFLite overflows; we saturate)
//     h = SaturatingRoundingDoublingHighMul(x, M)
//       = nearest int32 to x * M / 2^31, ties toward +infinity (gemmlowp's nudge: add
//         2^30 to a non-negative product, 1 - 2^30 to a negative one, then truncate)
//     r = RoundingDivideByPOT(h, right) = nearest of h / 2^right, ties AWAY FROM ZERO
//     q = saturate(r + zp)
//   This rounds twice (h, then r): the result can differ by 1 from round(acc * r) when h
//   itself landed on a tie. Both modes agree within 1 LSB for multipliers in (2^-31, 2^30);
//   they DIFFER at exact ties: acc * r = 2.5 gives 2 (kOnnx) but 3 (kFixed), -2.5 gives -2
//   vs -3.
//
// QLinearAdd, mode kOnnx (onnxruntime's x86 QLinearAdd: MlasQLinearAddKernelAvx2Helper in
// mlas/lib/intrinsics/avx2/qladd_avx2.cpp, which AVX-512 machines run too), on the raw stored
// values A and B (int8 or uint8), in float32:
//     rA = sA / sC,  rB = sB / sC                      one division each
//     F  = zC - (rA * zA + rB * zB)                    (the zero points' part, computed once)
//     c  = fma(A, rA, fma(B, rB, F))                   two fused multiply-adds
//     q  = saturate(round_half_to_even(c))
//   When A is one value broadcast along a run of B (onnxruntime's "scalar A" case), it swaps
//   the operands: c = fma(B, rB, fma(A, rA, F)). This is not DequantizeLinear -> Add ->
//   QuantizeLinear in float (fl(fl(a sA) + fl(b sB)) / sC): the two round differently on
//   ties, and matching onnxruntime is what this mode is for.
//
// QLinearMul, mode kOnnx (onnxruntime's x86 QLinearMul: MlasQLinearMulKernel's SSE2 path in
// mlas/lib/qlmul.cpp, which every x86 CPU runs), on the raw stored values A and B:
//     p = (A - zA) * (B - zB)                          exact (int32)
//     r = float32(sA * sB) / sC                        the product first, then one division
//     f = float32(p) * r + float32(zC)                 a multiply, then an add: the zero point
//                                                      is added BEFORE rounding, in float32
//     q = saturate(round_half_to_even(f))              (cvtps2dq: |f| >= 2^31 or NaN -> qmin)
//   The operands commute (p and r do), so onnxruntime's "scalar B" case is the same formula.
//   Adding zC before rounding differs from round(f - zC) + zC where f is within an ulp of 128's
//   scale of a tie (fl(2.5000002 + 128) = 130.5 -> 130, round(2.5000002) + 128 = 131).
//
// QLinearGlobalAveragePool, mode kOnnx (onnxruntime MlasQLinearGlobalAveragePoolNchw): the
//   sum over N pixels, minus N * zp_x, requantized by the multiplier sx / (sy * N) (float32,
//   the product first), as Requantize above.
//
// Accumulator overflow bound: an accumulator of K products plus a bias is
//     acc = sum_{k<K} (x_k - zp_x) * (w_k - zp_w) + bias,
//     |acc| <= K * max|x - zp_x| * max|w - zp_w| + max|bias|
//   and is exact in int32 iff that bound is <= 2^31 - 1 (AccumulatorFitsInt32). Kernels
//   check it when preparing a layer and refuse layers that could overflow.
#ifndef QFUSE_NUMERICS_REQUANTIZE_H_
#define QFUSE_NUMERICS_REQUANTIZE_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace qfuse::numerics {

// The largest |w| for which a pair of uint8 x int8 products fits int16: 255 * 64 * 2 = 32640
// <= 32767. vpmaddubsw, the int8 multiply of x86 CPUs without VNNI, adds such pairs into int16
// with saturation, so weights within [-64, 64] (--reduce_range, onnxruntime's 7-bit weights)
// make it exact. The weight quantizer, the AVX2 int8 GEMM and the oneDNN kernels all use this.
inline constexpr int kMaxAbsInt16PairWeight = 64;
static_assert(255 * kMaxAbsInt16PairWeight * 2 <= 32767, "a u8 x s8 pair must fit int16");

enum class RequantizeMode {
  kOnnx,   // float32 multiplier, round half to even (ONNX / onnxruntime)
  kFixed,  // Q31 multiplier + shift, gemmlowp rounding (TFLite / integer accelerators)
};

// ---------------------------------------------------------------------------------------
// Float <-> integer.

// round_half_to_even(f) as int32 for |f| < 2^31 (default FP rounding mode).
inline int32_t RoundHalfToEven(float f) { return static_cast<int32_t>(std::lrintf(f)); }

// clamp(f, lo, hi) with x86 MAXPS/MINPS semantics: a NaN f yields lo.
inline float ClampLikeMlas(float f, float lo, float hi) {
  f = f > lo ? f : lo;
  return f < hi ? f : hi;
}

// ONNX QuantizeLinear of one value; T is int8_t or uint8_t; zero_point in T's range.
template <typename T>
T QuantizeLinear(float x, float scale, int32_t zero_point) {
  constexpr int32_t kMin = std::numeric_limits<T>::lowest(), kMax = std::numeric_limits<T>::max();
  const float f = ClampLikeMlas(x / scale, static_cast<float>(kMin - zero_point),
                                static_cast<float>(kMax - zero_point));
  return static_cast<T>(RoundHalfToEven(f) + zero_point);
}

// ONNX DequantizeLinear of one value: float32(q - zero_point) * scale.
inline float Dequantize(int32_t q, float scale, int32_t zero_point) {
  return static_cast<float>(static_cast<int64_t>(q) - zero_point) * scale;
}

// ---------------------------------------------------------------------------------------
// Mode kOnnx.

// onnxruntime's requantization multiplier: (input_scale * weight_scale) / output_scale,
// evaluated in float32 in that order.
inline float OnnxMultiplier(float input_scale, float weight_scale, float output_scale) {
  const float product = input_scale * weight_scale;
  return product / output_scale;
}

// QLinearAdd (see the header comment): the ratios and the zero points' part.
struct OnnxAddMultipliers {
  float ra = 1.f;
  float rb = 1.f;
  float fixed = 0.f;
};
inline OnnxAddMultipliers OnnxQLinearAddMultipliers(float scale_a, int32_t zero_point_a, float scale_b,
                                                    int32_t zero_point_b, float scale_c, int32_t zero_point_c) {
  OnnxAddMultipliers m;
  m.ra = scale_a / scale_c;
  m.rb = scale_b / scale_c;
  const float za = m.ra * static_cast<float>(zero_point_a);
  const float zb = m.rb * static_cast<float>(zero_point_b);
  m.fixed = static_cast<float>(zero_point_c) - (za + zb);
  return m;
}
// One output of QLinearAdd from the raw stored inputs a and b, in [qmin, qmax];
// scalar_a: a is broadcast along a run of b (the operands' order swaps, as in onnxruntime).
inline int32_t OnnxQLinearAdd(int32_t a, int32_t b, const OnnxAddMultipliers& m, bool scalar_a, int32_t qmin,
                              int32_t qmax) {
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  const float c = scalar_a ? std::fma(fb, m.rb, std::fma(fa, m.ra, m.fixed))
                           : std::fma(fa, m.ra, std::fma(fb, m.rb, m.fixed));
  return RoundHalfToEven(ClampLikeMlas(c, static_cast<float>(qmin), static_cast<float>(qmax)));
}

// QLinearMul's ratio float32(sA * sB) / sC and one output (see the header comment).
inline float OnnxQLinearMulRatio(float scale_a, float scale_b, float scale_c) {
  const float product = scale_a * scale_b;
  return product / scale_c;
}
inline int32_t OnnxQLinearMul(int32_t a, int32_t zero_point_a, int32_t b, int32_t zero_point_b, float ratio,
                              int32_t zero_point_c, int32_t qmin, int32_t qmax) {
  const int32_t p = (a - zero_point_a) * (b - zero_point_b);
  const float scaled = static_cast<float>(p) * ratio;
  const float f = scaled + static_cast<float>(zero_point_c);
  const int32_t r = f >= 2147483648.f || !(f >= -2147483648.f) ? std::numeric_limits<int32_t>::min()
                                                                 : RoundHalfToEven(f);
  return r < qmin ? qmin : (r > qmax ? qmax : r);
}

// QLinearGlobalAveragePool's multiplier over `count` pixels: input_scale / (output_scale *
// count), in float32 with the product first, as onnxruntime computes it. It equals
// OnnxMultiplier(input_scale, 1, OnnxGlobalPoolDenominator(...)), which is how the pool
// kernel's output stage gets it.
inline float OnnxGlobalPoolDenominator(float output_scale, int64_t count) {
  return output_scale * static_cast<float>(count);
}
inline float OnnxGlobalPoolMultiplier(float input_scale, float output_scale, int64_t count) {
  return input_scale / OnnxGlobalPoolDenominator(output_scale, count);
}

// Per-channel multipliers: out[c] = OnnxMultiplier(input_scale, weight_scales[c],
// output_scale); out.size() == weight_scales.size().
void OnnxMultipliers(float input_scale, absl::Span<const float> weight_scales, float output_scale,
                     absl::Span<float> out);

template <typename T>
T RequantizeOnnx(int32_t acc, float multiplier, int32_t zero_point) {
  constexpr int32_t kMin = std::numeric_limits<T>::lowest(), kMax = std::numeric_limits<T>::max();
  const float scaled = static_cast<float>(acc) * multiplier;
  const float f = ClampLikeMlas(scaled, static_cast<float>(kMin - zero_point), static_cast<float>(kMax - zero_point));
  return static_cast<T>(RoundHalfToEven(f) + zero_point);
}

// out[i] = RequantizeOnnx<T>(acc[i], multiplier, zero_point); acc.size() == out.size().
template <typename T>
void RequantizeOnnxRow(absl::Span<const int32_t> acc, float multiplier, int32_t zero_point, absl::Span<T> out) {
  for (size_t i = 0; i < acc.size(); ++i) out[i] = RequantizeOnnx<T>(acc[i], multiplier, zero_point);
}

// ---------------------------------------------------------------------------------------
// Mode kFixed.

// real ~= multiplier * 2^(shift - 31); multiplier in [2^30, 2^31), shift in [-31, 30].
struct FixedMultiplier {
  int32_t multiplier = 0;
  int shift = 0;
};

// TFLite QuantizeMultiplier: frexp(real) = q * 2^shift with q in [0.5, 1);
// multiplier = round_half_away(q * 2^31) (renormalised when it rounds up to 2^31).
// InvalidArgument unless real is finite and in [2^-32, 2^30); smaller reals would need
// a shift < -31 (TFLite silently maps them to 0; we refuse).
absl::StatusOr<FixedMultiplier> QuantizeMultiplier(double real);

// The real number a FixedMultiplier stands for: multiplier * 2^(shift - 31).
inline double FixedMultiplierValue(FixedMultiplier m) { return std::ldexp(static_cast<double>(m.multiplier), m.shift - 31); }

// gemmlowp: nearest int32 to a * b / 2^31, ties toward +infinity; INT32_MAX for the one
// overflowing input pair a == b == INT32_MIN.
inline int32_t SaturatingRoundingDoublingHighMul(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::max();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
  return static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));  // division truncates toward 0
}

// gemmlowp: nearest int32 to x / 2^exponent, ties away from zero; exponent in [0, 31].
inline int32_t RoundingDivideByPOT(int32_t x, int exponent) {
  if (exponent == 0) return x;
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);  // >> of a negative is arithmetic (C++20, GCC)
}

// TFLite MultiplyByQuantizedMultiplier with a saturating left shift (see the header).
inline int32_t MultiplyByQuantizedMultiplier(int32_t acc, FixedMultiplier m) {
  const int left = m.shift > 0 ? m.shift : 0;
  const int right = m.shift > 0 ? 0 : -m.shift;
  int64_t shifted = static_cast<int64_t>(acc) * (int64_t{1} << left);
  if (shifted > std::numeric_limits<int32_t>::max()) shifted = std::numeric_limits<int32_t>::max();
  if (shifted < std::numeric_limits<int32_t>::min()) shifted = std::numeric_limits<int32_t>::min();
  return RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(static_cast<int32_t>(shifted), m.multiplier), right);
}

template <typename T>
T RequantizeFixed(int32_t acc, FixedMultiplier m, int32_t zero_point) {
  constexpr int64_t kMin = std::numeric_limits<T>::lowest(), kMax = std::numeric_limits<T>::max();
  int64_t q = static_cast<int64_t>(MultiplyByQuantizedMultiplier(acc, m)) + zero_point;
  q = q < kMin ? kMin : (q > kMax ? kMax : q);
  return static_cast<T>(q);
}

// Per-channel: out[c] = QuantizeMultiplier(reals[c]); the first failure names its channel.
absl::Status QuantizeMultipliers(absl::Span<const double> reals, absl::Span<FixedMultiplier> out);

// ---------------------------------------------------------------------------------------
// Accumulator overflow bound.

struct AccumulatorBound {
  int64_t num_products = 0;     // K: products summed into one accumulator
  int64_t max_abs_input = 0;    // max |x_q - zp_x| over the values x can take
  int64_t max_abs_weight = 0;   // max |w_q - zp_w|
  int64_t max_abs_bias = 0;     // max |bias| (int32 bias added to the accumulator)
};

// max|x - zp| over every value of a type with limits [qmin, qmax] given the zero point:
// max(zp - qmin, qmax - zp).
inline int64_t MaxAbsCentered(int64_t qmin, int64_t qmax, int64_t zero_point) {
  return zero_point - qmin > qmax - zero_point ? zero_point - qmin : qmax - zero_point;
}

// K * max_abs_input * max_abs_weight + max_abs_bias, saturated at INT64_MAX.
int64_t AccumulatorMagnitudeBound(const AccumulatorBound& bound);

// OK iff AccumulatorMagnitudeBound(bound) <= 2^31 - 1; otherwise OutOfRange stating the
// bound and its terms, prefixed by `what` (e.g. the node).
absl::Status CheckAccumulatorFitsInt32(const AccumulatorBound& bound, const std::string& what);

}  // namespace qfuse::numerics

#endif  // QFUSE_NUMERICS_REQUANTIZE_H_
