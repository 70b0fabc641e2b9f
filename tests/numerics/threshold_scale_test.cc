// The activation scale rule: T / qmax in float32, scale 1 for a threshold that is not > 0, and
// the threshold a TensorRT cache's scale stands for.
#include "numerics/threshold_scale.h"

#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace qfuse::numerics {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

TEST(ThresholdScaleTest, OneFloatDivision) {
  EXPECT_EQ(Bits(ScaleOfThreshold(1.f, kInt8SymmetricMax)), 0x3c010204u);  // TensorRT's cache bits of 1/127
  EXPECT_EQ(ScaleOfThreshold(3.14159274f, kInt8SymmetricMax), 3.14159274f / 127.f);
  EXPECT_EQ(ScaleOfThreshold(3.14159274f, kUint8Max), 3.14159274f / 255.f);
}

TEST(ThresholdScaleTest, NoRangeGivesScaleOne) {
  EXPECT_EQ(ScaleOfThreshold(0.f, kInt8SymmetricMax), 1.f);
  EXPECT_EQ(ScaleOfThreshold(-2.f, kUint8Max), 1.f);
  EXPECT_EQ(ScaleOfThreshold(std::numeric_limits<float>::quiet_NaN(), kInt8SymmetricMax), 1.f);
}

TEST(ThresholdScaleTest, ThresholdOfScaleIsOneFloatProduct) {
  EXPECT_EQ(ThresholdOfScale(0.025f, kInt8SymmetricMax), 0.025f * 127.f);
  EXPECT_EQ(ThresholdOfScale(ScaleOfThreshold(1.f, kInt8SymmetricMax), kInt8SymmetricMax), 1.f);
}

}  // namespace
}  // namespace qfuse::numerics
