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

// All 65536 pairs of input bytes, (a[i], b[i]) = (i >> 8, i & 255), and draws of scales
// (2^-6 to 2^-1) and raw zero points.
class QLinearAddRowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 + FMA at this ISA cap";
    for (int i = 0; i < (1 << 16); ++i) {
      a_[i] = static_cast<uint8_t>(i >> 8);
      b_[i] = static_cast<uint8_t>(i & 255);
    }
  }
  float Scale() { return std::exp2(log_scale_(rng_)); }
  int ZeroPoint() { return zero_point_(rng_); }

  std::mt19937 rng_{5};
  std::uniform_real_distribution<float> log_scale_{-6.f, -1.f};
  std::uniform_int_distribution<int> zero_point_{0, 255};
  std::vector<uint8_t> a_ = std::vector<uint8_t>(1 << 16), b_ = std::vector<uint8_t>(1 << 16);
  std::vector<uint8_t> y_ = std::vector<uint8_t>(1 << 16);
};

TEST_F(QLinearAddRowTest, EqualsTheScalarFormulaOnEveryPair) {
  for (int t = 0; t < 8; ++t) {  // a, b, y: INT8 or UINT8
    const bool a_signed = t & 1, b_signed = t & 2, y_signed = t & 4;
    for (int draw = 0; draw < 6; ++draw) {
      const float sa = Scale(), sb = draw == 0 ? sa : Scale();
      // draw 1: s_c = 2 s_a = 2 s_b puts many sums exactly on a half.
      const float sc = draw == 1 ? 2 * sa : Scale();
      const int za = ZeroPoint() - (a_signed ? 128 : 0), zb = ZeroPoint() - (b_signed ? 128 : 0);
      const int zc = ZeroPoint() - (y_signed ? 128 : 0);
      OnnxAddRow row;
      row.m = numerics::OnnxQLinearAddMultipliers(sa, za, draw == 1 ? sa : sb, zb, sc, zc);
      row.a_signed = a_signed;
      row.b_signed = b_signed;
      row.qmin = y_signed ? -128 : 0;
      row.qmax = y_signed ? 127 : 255;
      ASSERT_EQ(OnnxQLinearAddRowAvx2(row, a_.data(), b_.data(), 1 << 16, y_.data()), 1 << 16);
      int differ = 0;
      for (int i = 0; i < (1 << 16); ++i) {
        const int32_t av = a_signed ? static_cast<int8_t>(a_[i]) : a_[i];
        const int32_t bv = b_signed ? static_cast<int8_t>(b_[i]) : b_[i];
        const int32_t want = numerics::OnnxQLinearAdd(av, bv, row.m, /*scalar_a=*/false, row.qmin, row.qmax);
        const int32_t got = y_signed ? static_cast<int8_t>(y_[i]) : y_[i];
        differ += got != want;
      }
      EXPECT_EQ(differ, 0) << "types " << t << " draw " << draw;
    }
  }
}

// With a folded clamp: the Add's byte, then DequantizeLinear, the clamp and QuantizeLinear to
// the clamp's grid (a Relu to uint8, a Clip(-1, 2.5) to int8), as QLinearClamp in mode onnx.
TEST_F(QLinearAddRowTest, FoldedClampEqualsTheScalarSteps) {
  for (int draw = 0; draw < 12; ++draw) {
    const bool relu = draw % 2 == 0;
    const float sa = Scale(), sb = Scale(), sc = Scale();
    OnnxAddRow row;
    row.qmin = -128;
    row.qmax = 127;
    OnnxAddRow::Clamp c;
    c.in_scale = sc;
    c.in_zero_point = ZeroPoint() - 128;
    row.m = numerics::OnnxQLinearAddMultipliers(sa, 3, sb, 250, sc, c.in_zero_point);
    c.lo = relu ? 0.f : -1.f;
    c.hi = relu ? std::numeric_limits<float>::infinity() : 2.5f;
    // draws 2, 3: twice the Add's scale, so every odd step of the Add lands on or next to a
    // half of the clamp's grid, where the rounding decides.
    c.out_scale = draw / 2 == 1 ? 2 * sc : Scale();
    c.out_zero_point = relu ? 0 : -20;
    c.out_min = relu ? 0 : -128;
    c.out_max = relu ? 255 : 127;
    row.clamp = c;
    ASSERT_EQ(OnnxQLinearAddRowAvx2(row, a_.data(), b_.data(), 1 << 16, y_.data()), 1 << 16);
    int differ = 0;
    for (int i = 0; i < (1 << 16); ++i) {
      const int32_t q = numerics::OnnxQLinearAdd(a_[i], b_[i], row.m, /*scalar_a=*/false, row.qmin, row.qmax);
      float f = numerics::Dequantize(q, c.in_scale, c.in_zero_point);
      f = f < c.lo ? c.lo : f;
      f = f > c.hi ? c.hi : f;
      const int32_t want = relu ? int32_t{numerics::QuantizeLinear<uint8_t>(f, c.out_scale, c.out_zero_point)}
                                : int32_t{numerics::QuantizeLinear<int8_t>(f, c.out_scale, c.out_zero_point)};
      const int32_t got = relu ? int32_t{y_[i]} : int32_t{static_cast<int8_t>(y_[i])};
      differ += got != want;
    }
    EXPECT_EQ(differ, 0) << "draw " << draw;
  }
}

// A tail shorter than eight is left to the caller.
TEST_F(QLinearAddRowTest, LeavesTheTailToTheCaller) {
  OnnxAddRow row;
  row.m = numerics::OnnxQLinearAddMultipliers(0.1f, 0, 0.2f, 0, 0.3f, 0);
  std::vector<uint8_t> a(13, 1), b(13, 2), y(13, 77);
  EXPECT_EQ(OnnxQLinearAddRowAvx2(row, a.data(), b.data(), 13, y.data()), 8);
  EXPECT_EQ(y[8], 77);
  EXPECT_EQ(y[0], 2);  // (0.1 + 0.4) / 0.3 = 1.67 -> 2
}

}  // namespace
}  // namespace qfuse::runtime::int8
