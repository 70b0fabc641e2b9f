// The AVX2 QLinearMul row (runtime/int8/qlinear_mul_row.h) against the scalar
// numerics::OnnxQLinearMul on all 65536 input pairs, for every input and output type, with
// scales and zero points drawn at random: ratios that put products on rounding ties, that
// saturate every output, and one so large the float overflows int32.
#include "runtime/int8/qlinear_mul_row.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "numerics/requantize.h"
#include "runtime/cpu_isa.h"

namespace qfuse::runtime::int8 {
namespace {

TEST(QLinearMulRowTest, EqualsTheScalarFormulaOnEveryPair) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 at this ISA cap";
  std::vector<uint8_t> a(1 << 16), b(1 << 16), y(1 << 16);
  for (int i = 0; i < (1 << 16); ++i) {
    a[i] = static_cast<uint8_t>(i >> 8);
    b[i] = static_cast<uint8_t>(i & 255);
  }
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> log_scale(-8.f, -1.f);
  std::uniform_int_distribution<int> zero_point(0, 255);
  for (int t = 0; t < 8; ++t) {  // a, b, y: INT8 or UINT8
    const bool a_signed = t & 1, b_signed = t & 2, y_signed = t & 4;
    for (int draw = 0; draw < 6; ++draw) {
      const float sa = std::exp2(log_scale(rng)), sb = std::exp2(log_scale(rng));
      // draw 1: a ratio of 1/2 puts every odd product on a half; draw 2: one that saturates
      // nearly everything; draw 3: one whose products overflow int32 in float.
      const float sc = draw == 1   ? 2 * sa * sb
                       : draw == 2 ? sa * sb / 64
                       : draw == 3 ? sa * sb * 1e-6f
                                   : std::exp2(log_scale(rng));
      OnnxMulRow row;
      row.a_zero_point = zero_point(rng) - (a_signed ? 128 : 0);
      row.b_zero_point = zero_point(rng) - (b_signed ? 128 : 0);
      row.c_zero_point = zero_point(rng) - (y_signed ? 128 : 0);
      row.ratio = numerics::OnnxQLinearMulRatio(sa, sb, sc);
      row.a_signed = a_signed;
      row.b_signed = b_signed;
      row.qmin = y_signed ? -128 : 0;
      row.qmax = y_signed ? 127 : 255;
      ASSERT_EQ(OnnxQLinearMulRowAvx2(row, a.data(), b.data(), 1 << 16, y.data()), 1 << 16);
      int differ = 0;
      for (int i = 0; i < (1 << 16); ++i) {
        const int32_t av = a_signed ? static_cast<int8_t>(a[i]) : a[i];
        const int32_t bv = b_signed ? static_cast<int8_t>(b[i]) : b[i];
        const int32_t want = numerics::OnnxQLinearMul(av, row.a_zero_point, bv, row.b_zero_point, row.ratio,
                                                      row.c_zero_point, row.qmin, row.qmax);
        differ += (y_signed ? static_cast<int8_t>(y[i]) : y[i]) != want;
      }
      EXPECT_EQ(differ, 0) << "types " << t << " draw " << draw;
    }
  }
}

// Ratios where a fused multiply-add of the product and the zero point would give another byte
// than the two roundings (found by search): the row gives the two roundings' bytes.
TEST(QLinearMulRowTest, KeepsTheProductAndTheSumTwoRoundings) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 at this ISA cap";
  std::vector<uint8_t> a(1 << 16), b(1 << 16), y(1 << 16);
  for (int i = 0; i < (1 << 16); ++i) {
    a[i] = static_cast<uint8_t>(i >> 8);
    b[i] = static_cast<uint8_t>(i & 255);
  }
  std::mt19937 rng(10);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  int found = 0;
  for (int trial = 0; trial < 2000 && found < 5; ++trial) {
    OnnxMulRow row;
    row.ratio = (0.5f + unit(rng)) / 256;
    row.c_zero_point = 3;
    bool differs = false;
    for (int i = 0; i < (1 << 16) && !differs; ++i) {
      const float fused = std::fma(static_cast<float>(a[i] * b[i]), row.ratio, 3.f);
      differs = static_cast<int32_t>(std::nearbyint(fused)) !=
                static_cast<int32_t>(std::nearbyint(static_cast<float>(a[i] * b[i]) * row.ratio + 3.f));
    }
    if (!differs) continue;
    ++found;
    ASSERT_EQ(OnnxQLinearMulRowAvx2(row, a.data(), b.data(), 1 << 16, y.data()), 1 << 16);
    for (int i = 0; i < (1 << 16); ++i) {
      ASSERT_EQ(y[i], numerics::OnnxQLinearMul(a[i], 0, b[i], 0, row.ratio, 3, 0, 255)) << "pair " << i;
    }
  }
  EXPECT_GT(found, 0);
}

TEST(QLinearMulRowTest, LeavesTheTailToTheCaller) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 at this ISA cap";
  const std::vector<uint8_t> a(13, 7), b(13, 9);
  std::vector<uint8_t> y(13, 0xAB);
  OnnxMulRow row;
  EXPECT_EQ(OnnxQLinearMulRowAvx2(row, a.data(), b.data(), 13, y.data()), 8);
  for (int i = 8; i < 13; ++i) EXPECT_EQ(y[i], 0xAB) << i;  // the tail untouched
}

}  // namespace
}  // namespace qfuse::runtime::int8
