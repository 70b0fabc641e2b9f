// Bit-level checks of the 16-bit float conversions, exhaustively over float16.
#include "ir/float16.h"

#include <cmath>

#include "gtest/gtest.h"

namespace qfuse::ir {
namespace {

TEST(Float16Test, EveryHalfRoundTripsThroughFloatAndDouble) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = HalfBitsToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfBitsToFloat(DoubleToHalfBits(f)))) << h;
      continue;
    }
    EXPECT_EQ(DoubleToHalfBits(f), h) << std::hex << h;
  }
}

TEST(Float16Test, MidpointsRoundToEven) {
  // Between consecutive positive normal halves h and h+1 the midpoint goes to the even one.
  for (uint16_t h = 0x0400; h < 0x7bff; h += 37) {
    const double mid = (static_cast<double>(HalfBitsToFloat(h)) + HalfBitsToFloat(h + 1)) / 2;
    EXPECT_EQ(DoubleToHalfBits(mid), (h % 2 == 0) ? h : h + 1) << std::hex << h;
  }
}

TEST(Float16Test, BFloat16RoundToNearestEvenAndTruncate) {
  // 1 + 2^-8 is the midpoint between 1.0 (0x3f80, even) and 0x3f81.
  EXPECT_EQ(FloatToBFloat16Bits(1.f + std::ldexp(1.f, -8)), 0x3f80);
  EXPECT_EQ(FloatToBFloat16Bits(1.f + 3 * std::ldexp(1.f, -8)), 0x3f82);
  EXPECT_EQ(FloatToBFloat16BitsTruncate(1.f + 3 * std::ldexp(1.f, -8)), 0x3f81);
  EXPECT_EQ(BFloat16BitsToFloat(0xc040), -3.f);
  EXPECT_TRUE(std::isnan(BFloat16BitsToFloat(FloatToBFloat16Bits(std::nanf("")))));
}

}  // namespace
}  // namespace qfuse::ir
