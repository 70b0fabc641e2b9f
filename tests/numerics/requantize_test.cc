#include "numerics/requantize.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::numerics {
namespace {

constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();

FixedMultiplier Fixed(double real) {
  absl::StatusOr<FixedMultiplier> m = QuantizeMultiplier(real);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.value_or(FixedMultiplier{});
}

// ---- QuantizeLinear / Dequantize.

TEST(QuantizeLinearTest, RoundsHalfToEven) {
  // x / scale = +-0.5, 1.5, 2.5, 3.5 with scale 2.
  EXPECT_EQ(QuantizeLinear<int8_t>(1.0f, 2.0f, 0), 0);
  EXPECT_EQ(QuantizeLinear<int8_t>(3.0f, 2.0f, 0), 2);
  EXPECT_EQ(QuantizeLinear<int8_t>(5.0f, 2.0f, 0), 2);
  EXPECT_EQ(QuantizeLinear<int8_t>(7.0f, 2.0f, 0), 4);
  EXPECT_EQ(QuantizeLinear<int8_t>(-1.0f, 2.0f, 0), 0);
  EXPECT_EQ(QuantizeLinear<int8_t>(-3.0f, 2.0f, 0), -2);
  EXPECT_EQ(QuantizeLinear<int8_t>(-5.0f, 2.0f, 0), -2);
  // The tie is on x / scale, before the zero point is added.
  EXPECT_EQ(QuantizeLinear<uint8_t>(5.0f, 2.0f, 128), 130);
  EXPECT_EQ(QuantizeLinear<uint8_t>(-5.0f, 2.0f, 128), 126);
  EXPECT_EQ(QuantizeLinear<uint8_t>(3.0f, 2.0f, 1), 3);
}

TEST(QuantizeLinearTest, DividesInFloat32) {
  // 0.3f / 0.1f rounds to exactly 3 in float32, while 0.3f * (1 / 0.1f) does not
  // necessarily; whichever it is, the result must equal the division's.
  const float x = 0.35f, scale = 0.1f;
  EXPECT_EQ(QuantizeLinear<int8_t>(x, scale, 0), static_cast<int8_t>(std::lrintf(x / scale)));
}

TEST(QuantizeLinearTest, Saturates) {
  EXPECT_EQ(QuantizeLinear<int8_t>(1000.0f, 1.0f, 0), 127);
  EXPECT_EQ(QuantizeLinear<int8_t>(-1000.0f, 1.0f, 0), -128);
  EXPECT_EQ(QuantizeLinear<int8_t>(127.5f, 1.0f, 0), 127);   // 128 after rounding: saturates
  EXPECT_EQ(QuantizeLinear<int8_t>(-128.5f, 1.0f, 0), -128);
  EXPECT_EQ(QuantizeLinear<int8_t>(120.0f, 1.0f, 10), 127);  // 130 > 127 because of the zero point
  EXPECT_EQ(QuantizeLinear<uint8_t>(-1.0f, 1.0f, 0), 0);
  EXPECT_EQ(QuantizeLinear<uint8_t>(255.4f, 1.0f, 0), 255);
  EXPECT_EQ(QuantizeLinear<uint8_t>(1000.0f, 2.0f, 128), 255);
  EXPECT_EQ(QuantizeLinear<uint8_t>(-254.0f, 2.0f, 128), 1);
  EXPECT_EQ(QuantizeLinear<uint8_t>(-1000.0f, 2.0f, 128), 0);
  EXPECT_EQ(QuantizeLinear<int8_t>(std::numeric_limits<float>::infinity(), 1.0f, 0), 127);
  EXPECT_EQ(QuantizeLinear<int8_t>(-std::numeric_limits<float>::infinity(), 1.0f, 0), -128);
  EXPECT_EQ(QuantizeLinear<int8_t>(std::nanf(""), 1.0f, 0), -128);  // MAXPS semantics
  EXPECT_EQ(QuantizeLinear<uint8_t>(3e38f, 1e-30f, 0), 255);       // x / scale = inf
}

TEST(DequantizeTest, SubtractsThenScales) {
  EXPECT_EQ(Dequantize(0, 2.0f, 128), -256.0f);
  EXPECT_EQ(Dequantize(255, 2.0f, 128), 254.0f);
  EXPECT_EQ(Dequantize(-128, 0.5f, 0), -64.0f);
  EXPECT_EQ(Dequantize(kInt32Max, 1.0f, -1), 2147483648.0f);  // no int32 overflow in q - zp
}

TEST(DequantizeTest, QuantizeOfDequantizeIsIdentity) {
  for (int q = -128; q <= 127; ++q) {
    EXPECT_EQ(QuantizeLinear<int8_t>(Dequantize(q, 0.0173f, 5), 0.0173f, 5), q);
  }
}

// ---- Mode kOnnx.

TEST(RequantizeOnnxTest, TiesToEven) {
  EXPECT_EQ(RequantizeOnnx<int8_t>(5, 0.5f, 0), 2);    // 2.5
  EXPECT_EQ(RequantizeOnnx<int8_t>(7, 0.5f, 0), 4);    // 3.5
  EXPECT_EQ(RequantizeOnnx<int8_t>(1, 0.5f, 0), 0);    // 0.5
  EXPECT_EQ(RequantizeOnnx<int8_t>(-1, 0.5f, 0), 0);   // -0.5
  EXPECT_EQ(RequantizeOnnx<int8_t>(-5, 0.5f, 0), -2);  // -2.5
  EXPECT_EQ(RequantizeOnnx<int8_t>(-7, 0.5f, 0), -4);  // -3.5
  EXPECT_EQ(RequantizeOnnx<int8_t>(10, 0.25f, 3), 5);  // 2.5 -> 2, + 3
  EXPECT_EQ(RequantizeOnnx<uint8_t>(-10, 0.25f, 100), 98);
}

TEST(RequantizeOnnxTest, Saturates) {
  EXPECT_EQ(RequantizeOnnx<int8_t>(1000, 0.5f, 0), 127);
  EXPECT_EQ(RequantizeOnnx<int8_t>(-1000, 0.5f, 0), -128);
  EXPECT_EQ(RequantizeOnnx<int8_t>(255, 0.5f, 0), 127);   // 127.5 -> 128 -> saturates
  EXPECT_EQ(RequantizeOnnx<int8_t>(253, 0.5f, 0), 126);   // 126.5 -> 126
  EXPECT_EQ(RequantizeOnnx<int8_t>(-257, 0.5f, 0), -128); // -128.5 -> -128
  EXPECT_EQ(RequantizeOnnx<uint8_t>(-1, 1.0f, 0), 0);
  EXPECT_EQ(RequantizeOnnx<uint8_t>(200, 1.0f, 100), 255);
  EXPECT_EQ(RequantizeOnnx<uint8_t>(-200, 1.0f, 100), 0);
  EXPECT_EQ(RequantizeOnnx<int8_t>(kInt32Max, 1.0f, 0), 127);
  EXPECT_EQ(RequantizeOnnx<int8_t>(kInt32Min, 1.0f, 0), -128);
  EXPECT_EQ(RequantizeOnnx<uint8_t>(kInt32Max, 1e-7f, 0), 215);  // 2147483648 * 1e-7f = 214.748...
  EXPECT_EQ(RequantizeOnnx<int8_t>(kInt32Min, 1e-9f, 0), -2);     // -2.147...
}

TEST(RequantizeOnnxTest, ConvertsAccumulatorToFloat32First) {
  // 2^24 + 1 is not a float32: it becomes 2^24 (half to even) before the multiply. With
  // m = 2.5 * 2^-24 the float32 product is exactly 2.5 -> 2 (even), while the double
  // product 2.50000015 would round to 3.
  const int32_t acc = (1 << 24) + 1;
  EXPECT_EQ(static_cast<float>(acc), 16777216.0f);
  const float m = 2.5f * std::ldexp(1.0f, -24);
  EXPECT_EQ(RequantizeOnnx<int8_t>(acc, m, 0), 2);
  EXPECT_EQ(std::lrint(static_cast<double>(acc) * static_cast<double>(m)), 3);
}

TEST(RequantizeOnnxTest, MultiplierIsProductThenQuotientInFloat32) {
  const float in = 0.0066f, w = 0.00705f, out = 0.0107f;
  EXPECT_EQ(OnnxMultiplier(in, w, out), (in * w) / out);
  float per_channel[2];
  const float w_scales[2] = {0.5f, 0.25f};
  OnnxMultipliers(0.1f, w_scales, 0.2f, per_channel);
  EXPECT_EQ(per_channel[0], (0.1f * 0.5f) / 0.2f);
  EXPECT_EQ(per_channel[1], (0.1f * 0.25f) / 0.2f);
}

TEST(RequantizeOnnxTest, RowAppliesElementwise) {
  const int32_t acc[4] = {5, 7, -5, 1000};
  int8_t out[4];
  RequantizeOnnxRow<int8_t>(acc, 0.5f, 1, absl::MakeSpan(out));
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(out[1], 5);
  EXPECT_EQ(out[2], -1);
  EXPECT_EQ(out[3], 127);
}

// ---- Mode kFixed.

TEST(FixedPointTest, SaturatingRoundingDoublingHighMul) {
  constexpr int32_t kHalf = 1 << 30;  // 0.5 in Q31
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(3, kHalf), 2);    // 1.5 -> 2
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(5, kHalf), 3);    // 2.5 -> 3
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(-3, kHalf), -1);  // -1.5 -> -1 (ties toward +inf)
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(-5, kHalf), -2);  // -2.5 -> -2
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(-7, kHalf), -3);  // -3.5 -> -3
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt32Min, kInt32Min), kInt32Max);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt32Max, kInt32Max), kInt32Max - 1);
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt32Min, kInt32Max), kInt32Min + 1);
}

TEST(FixedPointTest, RoundingDivideByPOTTiesAwayFromZero) {
  EXPECT_EQ(RoundingDivideByPOT(3, 1), 2);    // 1.5
  EXPECT_EQ(RoundingDivideByPOT(5, 1), 3);    // 2.5
  EXPECT_EQ(RoundingDivideByPOT(-3, 1), -2);  // -1.5
  EXPECT_EQ(RoundingDivideByPOT(-5, 1), -3);  // -2.5
  EXPECT_EQ(RoundingDivideByPOT(6, 2), 2);    // 1.5
  EXPECT_EQ(RoundingDivideByPOT(-6, 2), -2);  // -1.5
  EXPECT_EQ(RoundingDivideByPOT(-7, 2), -2);  // -1.75
  EXPECT_EQ(RoundingDivideByPOT(-5, 2), -1);  // -1.25
  EXPECT_EQ(RoundingDivideByPOT(7, 0), 7);
  EXPECT_EQ(RoundingDivideByPOT(kInt32Max, 31), 1);
  EXPECT_EQ(RoundingDivideByPOT(kInt32Min, 31), -1);
}

TEST(RequantizeFixedTest, TiesAwayFromZeroAndDifferFromOnnx) {
  // 0.25 = 2^30 * 2^(-1 - 31): SRDHM halves exactly (even acc), the tie is in the shift.
  const FixedMultiplier quarter = Fixed(0.25);
  EXPECT_EQ(quarter.multiplier, 1 << 30);
  EXPECT_EQ(quarter.shift, -1);
  struct Case {
    int32_t acc;
    int8_t onnx, fixed;
  };
  const Case cases[] = {
      {10, 2, 3},    // 2.5: even vs away from zero: the modes differ
      {-10, -2, -3}, // -2.5
      {2, 0, 1},     // 0.5
      {-2, 0, -1},   // -0.5
      {6, 2, 2},     // 1.5: both round to 2
      {-6, -2, -2},  // -1.5
      {14, 4, 4},    // 3.5
      {18, 4, 5},    // 4.5
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.acc);
    EXPECT_EQ(RequantizeOnnx<int8_t>(c.acc, 0.25f, 0), c.onnx);
    EXPECT_EQ(RequantizeFixed<int8_t>(c.acc, quarter, 0), c.fixed);
  }
}

TEST(RequantizeFixedTest, DoubleRoundingIsOneLsbOff) {
  // acc = 1, multiplier 0.25: SRDHM gives 0.5 -> 1, then 1 / 2 = 0.5 -> 1; exact is 0.25 -> 0.
  EXPECT_EQ(RequantizeFixed<int8_t>(1, Fixed(0.25), 0), 1);
  EXPECT_EQ(RequantizeOnnx<int8_t>(1, 0.25f, 0), 0);
}

TEST(RequantizeFixedTest, Saturates) {
  const FixedMultiplier m = Fixed(0.5);
  EXPECT_EQ(RequantizeFixed<int8_t>(1000, m, 0), 127);
  EXPECT_EQ(RequantizeFixed<int8_t>(-1000, m, 0), -128);
  EXPECT_EQ(RequantizeFixed<int8_t>(253, m, 0), 127);    // 126.5 -> 127 (away)
  EXPECT_EQ(RequantizeFixed<int8_t>(255, m, 0), 127);    // 127.5 -> 128 -> 127
  EXPECT_EQ(RequantizeFixed<uint8_t>(300, m, 200), 255);
  EXPECT_EQ(RequantizeFixed<uint8_t>(-500, m, 100), 0);
  EXPECT_EQ(RequantizeFixed<int8_t>(kInt32Max, m, 0), 127);
  EXPECT_EQ(RequantizeFixed<int8_t>(kInt32Min, m, 0), -128);
  // Multiplier > 1: the left shift saturates instead of overflowing.
  const FixedMultiplier big = Fixed(1000.0);
  EXPECT_GT(big.shift, 0);
  EXPECT_EQ(RequantizeFixed<int8_t>(kInt32Max, big, 0), 127);
  EXPECT_EQ(RequantizeFixed<int8_t>(kInt32Min, big, 0), -128);
  EXPECT_EQ(RequantizeFixed<int8_t>(-1, big, 0), -128);
  EXPECT_EQ(MultiplyByQuantizedMultiplier(3, Fixed(2.0)), 6);
  EXPECT_EQ(MultiplyByQuantizedMultiplier(-3, Fixed(3.0)), -9);
}

TEST(RequantizeFixedTest, MultiplierNearOneAndTiny) {
  // Just below 1: M = 2^31 - 1 after rounding, shift 0.
  const FixedMultiplier almost_one = Fixed(1.0 - 1e-12);
  EXPECT_EQ(almost_one.shift, 1);  // rounds up to 2^31, renormalised to 2^30 * 2
  EXPECT_EQ(almost_one.multiplier, 1 << 30);
  EXPECT_EQ(RequantizeFixed<int8_t>(100, almost_one, 0), 100);
  EXPECT_EQ(RequantizeFixed<int8_t>(-128, almost_one, 0), -128);
  const FixedMultiplier below_one = Fixed(0.9999);
  EXPECT_EQ(below_one.shift, 0);
  EXPECT_EQ(RequantizeFixed<int8_t>(127, below_one, 0), 127);
  EXPECT_EQ(RequantizeFixed<int8_t>(-127, below_one, 0), -127);
  // Tiny: 2^-31 * 3 -> only huge accumulators survive.
  const FixedMultiplier tiny = Fixed(std::ldexp(3.0, -31));
  EXPECT_EQ(tiny.shift, -29);
  EXPECT_EQ(RequantizeFixed<int8_t>(kInt32Max, tiny, 0), 3);
  EXPECT_EQ(RequantizeFixed<int8_t>(kInt32Min, tiny, 0), -3);
  EXPECT_EQ(RequantizeFixed<int8_t>(1 << 20, tiny, 0), 0);
  EXPECT_EQ(RequantizeOnnx<int8_t>(kInt32Max, static_cast<float>(std::ldexp(3.0, -31)), 0), 3);
}

TEST(QuantizeMultiplierTest, RejectsOutOfRange) {
  EXPECT_FALSE(QuantizeMultiplier(0.0).ok());
  EXPECT_FALSE(QuantizeMultiplier(-0.5).ok());
  EXPECT_FALSE(QuantizeMultiplier(std::nan("")).ok());
  EXPECT_FALSE(QuantizeMultiplier(std::ldexp(1.0, -33)).ok());
  EXPECT_FALSE(QuantizeMultiplier(std::ldexp(1.0, 30)).ok());
  EXPECT_TRUE(QuantizeMultiplier(std::ldexp(1.0, -32)).ok());
  FixedMultiplier out[2];
  const double reals[2] = {0.5, -1.0};
  absl::Status s = QuantizeMultipliers(reals, absl::MakeSpan(out));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("channel 1"), std::string::npos) << s;
}

TEST(QuantizeMultiplierTest, RoundTripsWithinHalfAnUlpOfQ31) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-31.0, 29.0);
  for (int i = 0; i < 20000; ++i) {
    const double real = std::exp2(exponent(rng));
    const FixedMultiplier m = Fixed(real);
    ASSERT_GE(m.multiplier, 1 << 30);
    ASSERT_GE(m.shift, -31);
    ASSERT_LE(m.shift, 30);
    // |M - q * 2^31| <= 0.5 with M >= 2^30: relative error <= 2^-31.
    EXPECT_LE(std::abs(FixedMultiplierValue(m) - real) / real, std::ldexp(1.0, -31)) << real;
  }
  EXPECT_EQ(FixedMultiplierValue(Fixed(0.5)), 0.5);
  EXPECT_EQ(FixedMultiplierValue(Fixed(0.75)), 0.75);
  EXPECT_EQ(FixedMultiplierValue(Fixed(3.0)), 3.0);
}

TEST(RequantizeModesTest, FixedWithinOneLsbOfOnnxForConvMultipliers) {
  // Multipliers of quantized convs: in_scale * w_scale / out_scale, typically 1e-5..1.
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> log_m(std::log(1e-5), std::log(1.0));
  std::uniform_int_distribution<int32_t> acc_dist(-(1 << 22), 1 << 22);
  std::uniform_int_distribution<int32_t> zp_dist(-20, 20);
  int differ = 0, total = 0;
  for (int i = 0; i < 2000; ++i) {
    const float mf = static_cast<float>(std::exp(log_m(rng)));
    const FixedMultiplier m = Fixed(mf);
    const int32_t zp = zp_dist(rng);
    for (int j = 0; j < 100; ++j) {
      const int32_t acc = acc_dist(rng) >> (j % 16);  // many small accumulators too
      const int onnx = RequantizeOnnx<int8_t>(acc, mf, zp);
      const int fixed = RequantizeFixed<int8_t>(acc, m, zp);
      ASSERT_LE(std::abs(onnx - fixed), 1) << "acc " << acc << " multiplier " << mf << " zp " << zp;
      differ += onnx != fixed;
      ++total;
    }
  }
  // Disagreements are rare (ties and float32 rounding of large accumulators).
  EXPECT_LT(differ, total / 100) << differ << " of " << total;
}

// ---- Overflow bound.

TEST(AccumulatorBoundTest, StatesTheBound) {
  EXPECT_EQ(MaxAbsCentered(0, 255, 0), 255);
  EXPECT_EQ(MaxAbsCentered(0, 255, 128), 128);
  EXPECT_EQ(MaxAbsCentered(-128, 127, 0), 128);
  EXPECT_EQ(MaxAbsCentered(-128, 127, -128), 255);
  // uint8 activations (any zp) x int8 weights: K * 255 * 128 <= 2^31 - 1 up to K = 65793.
  AccumulatorBound b{65793, 255, 128, 0};
  EXPECT_EQ(AccumulatorMagnitudeBound(b), int64_t{65793} * 255 * 128);
  QFUSE_EXPECT_OK(CheckAccumulatorFitsInt32(b, "conv"));
  b.num_products = 65794;
  absl::Status s = CheckAccumulatorFitsInt32(b, "conv");
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("conv"), std::string::npos) << s;
  // The bias counts.
  b = AccumulatorBound{65793, 255, 128, kInt32Max - int64_t{65793} * 255 * 128};
  QFUSE_EXPECT_OK(CheckAccumulatorFitsInt32(b, "conv"));
  b.max_abs_bias += 1;
  EXPECT_FALSE(CheckAccumulatorFitsInt32(b, "conv").ok());
  // Saturates instead of wrapping.
  b = AccumulatorBound{int64_t{1} << 62, 255, 255, 0};
  EXPECT_EQ(AccumulatorMagnitudeBound(b), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(CheckAccumulatorFitsInt32(b, "x").ok());
}

// onnxruntime's QLinearAdd on hand-computed ties. sA = 0.1, sB = 0.2, sC = 0.4 give rA = 0.25
// and rB = 0.5 exactly (0.4f == 4 * 0.1f), so c = A / 4 + B / 2 is exact.
// onnxruntime's QLinearMul adds the output zero point before rounding: sA = sB = 0.01, sC =
// 0.05, r = 0.0019999999; (2 - 128)(3 - 128) = 15750, fl(15750 r) = 31.499998, + 128 = 159.5
// (float32), a tie -> 160 (rounding first would give 31 + 128 = 159).
TEST(OnnxQLinearMulTest, ZeroPointIsAddedBeforeRounding) {
  const float r = OnnxQLinearMulRatio(0.01f, 0.01f, 0.05f);
  EXPECT_EQ(r, 0.0019999999f);
  EXPECT_EQ(OnnxQLinearMul(2, 128, 3, 128, r, 128, 0, 255), 160);
  EXPECT_EQ(OnnxQLinearMul(3, 128, 2, 128, r, 128, 0, 255), 160);   // the operands commute
  EXPECT_EQ(OnnxQLinearMul(0, 128, 255, 128, r, 128, 0, 255), 95);  // fl(-16256 r) + 128 = 95.48801
  EXPECT_EQ(OnnxQLinearMul(0, 128, 0, 128, 1.f, 128, 0, 255), 255);  // 16384 + 128 saturates
  // cvtps2dq gives INT32_MIN beyond 2^31 (onnxruntime then saturates that to qmin).
  EXPECT_EQ(OnnxQLinearMul(0, 128, 0, 128, 1e30f, 128, 0, 255), 0);
}

TEST(OnnxQLinearAddTest, TiesRoundHalfToEvenAndSaturate) {
  const OnnxAddMultipliers m = OnnxQLinearAddMultipliers(0.1f, 0, 0.2f, 0, 0.4f, 0);
  EXPECT_EQ(m.ra, 0.25f);
  EXPECT_EQ(m.rb, 0.5f);
  EXPECT_EQ(m.fixed, 0.f);
  EXPECT_EQ(OnnxQLinearAdd(96, 115, m, false, -128, 127), 82);  // 81.5 -> 82
  EXPECT_EQ(OnnxQLinearAdd(10, 0, m, false, -128, 127), 2);     // 2.5 -> 2
  EXPECT_EQ(OnnxQLinearAdd(12, 1, m, false, -128, 127), 4);     // 3.5 -> 4
  EXPECT_EQ(OnnxQLinearAdd(-10, 0, m, false, -128, 127), -2);   // -2.5 -> -2
  EXPECT_EQ(OnnxQLinearAdd(127, 127, m, false, -128, 127), 95);  // 31.75 + 63.5 = 95.25
  const OnnxAddMultipliers wide = OnnxQLinearAddMultipliers(1.f, 0, 1.f, 0, 1.f, 0);
  EXPECT_EQ(OnnxQLinearAdd(127, 127, wide, false, -128, 127), 127);      // 254 saturates
  EXPECT_EQ(OnnxQLinearAdd(-128, -128, wide, false, -128, 127), -128);   // -256 saturates
  // Zero points: uint8 with 128 as zero 0 everywhere: F = 128 - (0.25 * 128 + 0.5 * 128) = 32,
  // raw 224 and 128 are 96 and 0: 224 / 4 + 128 / 2 + 32 = 152 = 128 + 24.
  const OnnxAddMultipliers u8 = OnnxQLinearAddMultipliers(0.1f, 128, 0.2f, 128, 0.4f, 128);
  EXPECT_EQ(u8.fixed, 32.f);
  EXPECT_EQ(OnnxQLinearAdd(224, 128, u8, false, 0, 255), 152);
}

// The operand order matters once: sA = 0.013, sB = 0.06, sC = 0.09, A = -15, B = -47
// (exact rational arithmetic): fma(A, rA, fl(B rB)) = -33.5 exactly -> -34, while the
// scalar-A order fma(B, rB, fl(A rA)) = -33.499996 -> -33.
TEST(OnnxQLinearAddTest, ScalarAOrderIsOnnxRuntimes) {
  const OnnxAddMultipliers m = OnnxQLinearAddMultipliers(0.013f, 0, 0.06f, 0, 0.09f, 0);
  EXPECT_EQ(OnnxQLinearAdd(-15, -47, m, false, -128, 127), -34);
  EXPECT_EQ(OnnxQLinearAdd(-15, -47, m, true, -128, 127), -33);
}

// onnxruntime's global pool multiplier sx / (sy * N) differs in the last bit from
// sx * (1 / N) / sy for N = 49 (7 x 7): 0.05 / (0.03 * 49) = 0.034013607 (float32), the other
// order 0.034013603.
TEST(OnnxGlobalPoolMultiplierTest, ProductFirst) {
  EXPECT_EQ(OnnxGlobalPoolMultiplier(0.05f, 0.03f, 49), 0.05f / (0.03f * 49.f));
  EXPECT_EQ(OnnxGlobalPoolMultiplier(0.05f, 0.03f, 49), 0.034013607f);
  EXPECT_NE(OnnxGlobalPoolMultiplier(0.05f, 0.03f, 49), OnnxMultiplier(0.05f, 1.f / 49.f, 0.03f));
  EXPECT_EQ(OnnxGlobalPoolMultiplier(0.5f, 0.25f, 64), 0.03125f);  // powers of two: exact
  // The pool kernel's output stage computes it as OnnxMultiplier over the denominator.
  for (int64_t n : {1, 7, 49, 64, 196}) {
    EXPECT_EQ(OnnxMultiplier(0.05f, 1.f, OnnxGlobalPoolDenominator(0.03f, n)), OnnxGlobalPoolMultiplier(0.05f, 0.03f, n));
  }
}

}  // namespace
}  // namespace qfuse::numerics
