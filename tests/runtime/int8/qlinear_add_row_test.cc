// The AVX2 QLinearAdd row (runtime/int8/qlinear_add_row.h) against the scalar
// numerics::OnnxQLinearAdd on all 65536 input pairs, for every input and output type and
// scales, zero points and ratios drawn at random, including ties of the rounding.
#include "runtime/int8/qlinear_add_row.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"

namespace qfuse::runtime::int8 {
namespace {

// Every pair of input bytes: (a[i], b[i]) = (i >> 8, i & 255).
struct AllPairs {
  AllPairs() : a(1 << 16), b(1 << 16) {
    for (int i = 0; i < (1 << 16); ++i) {
      a[i] = static_cast<uint8_t>(i >> 8);
      b[i] = static_cast<uint8_t>(i & 255);
    }
  }
  std::vector<uint8_t> a, b;
};

TEST(QLinearAddRowTest, EqualsTheScalarFormulaOnEveryPair) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 + FMA at this ISA cap";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> log_scale(-6.f, -1.f);
  std::uniform_int_distribution<int> zp(0, 255);
  const AllPairs pairs;
  const std::vector<uint8_t>& a = pairs.a;
  const std::vector<uint8_t>& b = pairs.b;
  std::vector<uint8_t> y(1 << 16);
  int cases = 0;
  for (int t = 0; t < 8; ++t) {  // a, b, y: INT8 or UINT8
    const bool a_signed = t & 1, b_signed = t & 2, y_signed = t & 4;
    for (int draw = 0; draw < 6; ++draw) {
      const float sa = std::exp2(log_scale(rng)), sb = draw == 0 ? sa : std::exp2(log_scale(rng));
      // draw 1: s_c = 2 s_a = 2 s_b puts many sums exactly on a half.
      const float sc = draw == 1 ? 2 * sa : std::exp2(log_scale(rng));
      const int za = zp(rng) - (a_signed ? 128 : 0), zb = zp(rng) - (b_signed ? 128 : 0);
      const int zc = zp(rng) - (y_signed ? 128 : 0);
      OnnxAddRow row;
      row.m = numerics::OnnxQLinearAddMultipliers(sa, za, draw == 1 ? sa : sb, zb, sc, zc);
      row.a_signed = a_signed;
      row.b_signed = b_signed;
      row.qmin = y_signed ? -128 : 0;
      row.qmax = y_signed ? 127 : 255;
      ASSERT_EQ(OnnxQLinearAddRowAvx2(row, a.data(), b.data(), 1 << 16, y.data()), 1 << 16);
      int differ = 0;
      for (int i = 0; i < (1 << 16); ++i) {
        const int32_t av = a_signed ? static_cast<int8_t>(a[i]) : a[i];
        const int32_t bv = b_signed ? static_cast<int8_t>(b[i]) : b[i];
        const int32_t want = numerics::OnnxQLinearAdd(av, bv, row.m, /*scalar_a=*/false, row.qmin, row.qmax);
        const int32_t got = y_signed ? static_cast<int8_t>(y[i]) : y[i];
        differ += got != want;
      }
      EXPECT_EQ(differ, 0) << "types " << t << " draw " << draw;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 48);
}

// With a folded clamp: the Add's byte, then DequantizeLinear, the clamp and QuantizeLinear to
// the clamp's grid (a Relu to uint8, a Clip(-1, 2.5) to int8), as QLinearClamp in mode onnx.
TEST(QLinearAddRowTest, FoldedClampEqualsTheScalarSteps) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 + FMA at this ISA cap";
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> log_scale(-6.f, -1.f);
  std::uniform_int_distribution<int> zp(0, 255);
  const AllPairs pairs;
  const std::vector<uint8_t>& a = pairs.a;
  const std::vector<uint8_t>& b = pairs.b;
  std::vector<uint8_t> y(1 << 16);
  for (int draw = 0; draw < 12; ++draw) {
    const bool relu = draw % 2 == 0;
    const float sa = std::exp2(log_scale(rng)), sb = std::exp2(log_scale(rng)), sc = std::exp2(log_scale(rng));
    OnnxAddRow row;
    row.qmin = -128;
    row.qmax = 127;
    OnnxAddRow::Clamp c;
    c.in_scale = sc;
    c.in_zero_point = zp(rng) - 128;
    row.m = numerics::OnnxQLinearAddMultipliers(sa, 3, sb, 250, sc, c.in_zero_point);
    c.lo = relu ? 0.f : -1.f;
    c.hi = relu ? std::numeric_limits<float>::infinity() : 2.5f;
    // draw 2, 3: the clamp keeps the Add's scale, so many values land on a half of the new grid.
    c.out_scale = draw / 2 == 1 ? sc / 2 : std::exp2(log_scale(rng));
    c.out_zero_point = relu ? 0 : -20;
    c.out_min = relu ? 0 : -128;
    c.out_max = relu ? 255 : 127;
    row.clamp = c;
    ASSERT_EQ(OnnxQLinearAddRowAvx2(row, a.data(), b.data(), 1 << 16, y.data()), 1 << 16);
    int differ = 0;
    for (int i = 0; i < (1 << 16); ++i) {
      const int32_t q = numerics::OnnxQLinearAdd(a[i], b[i], row.m, /*scalar_a=*/false, row.qmin, row.qmax);
      float f = numerics::Dequantize(q, c.in_scale, c.in_zero_point);
      f = f < c.lo ? c.lo : f;
      f = f > c.hi ? c.hi : f;
      const int32_t want = relu ? int32_t{numerics::QuantizeLinear<uint8_t>(f, c.out_scale, c.out_zero_point)}
                                : int32_t{numerics::QuantizeLinear<int8_t>(f, c.out_scale, c.out_zero_point)};
      const int32_t got = relu ? int32_t{y[i]} : int32_t{static_cast<int8_t>(y[i])};
      differ += got != want;
    }
    EXPECT_EQ(differ, 0) << "draw " << draw;
  }
}

// A tail shorter than eight is left to the caller.
TEST(QLinearAddRowTest, LeavesTheTailToTheCaller) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 + FMA at this ISA cap";
  OnnxAddRow row;
  row.m = numerics::OnnxQLinearAddMultipliers(0.1f, 0, 0.2f, 0, 0.3f, 0);
  std::vector<uint8_t> a(13, 1), b(13, 2), y(13, 77);
  EXPECT_EQ(OnnxQLinearAddRowAvx2(row, a.data(), b.data(), 13, y.data()), 8);
  EXPECT_EQ(y[8], 77);
  EXPECT_EQ(y[0], 2);  // (0.1 + 0.4) / 0.3 = 1.67 -> 2
}

}  // namespace
}  // namespace qfuse::runtime::int8
