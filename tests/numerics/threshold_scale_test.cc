// The activation scale rule: T / qmax in float32, scale 1 for a threshold that is not > 0, and
// the threshold a TensorRT cache's scale stands for.
#include "numerics/threshold_scale.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

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

// Over scales from 2^-23 to 1: the result's float32 reciprocal floors to M = floor(1 / scale),
// give or take 2^-20 of it (checked in double), the result is within 4 ulps below 1/M, never
// below the scale by more than 2^-19 of it, and above it by at most one step of M (1 / M).
TEST(ThresholdScaleTest, WholeReciprocalScales) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> log2_scale(-23.0, -0.01);
  for (int i = 0; i < 100000; ++i) {
    const float scale = static_cast<float>(std::exp2(log2_scale(rng)));
    const float r = ScaleWithWholeReciprocal(scale);
    const double m = std::floor(1.0 / static_cast<double>(scale) * (1.0 + 0x1p-20));
    ASSERT_EQ(std::floor(1.0f / r), static_cast<float>(m)) << scale;
    ASSERT_LE(r, static_cast<float>(1.0 / m)) << scale;
    ASSERT_GE(r, static_cast<float>(1.0 / m) * (1.f - 0x1p-21f)) << scale;
    ASSERT_GE(r, scale * (1.f - 0x1p-19f)) << scale;
    ASSERT_LE(r, scale * (1.0 + 1.0 / m + 0x1p-21)) << scale;
  }
  // Hand-checked: 0.000326 (a calibrated attention Softmax; 1 / 0.000326 = 3067.48) -> 1/3067,
  // whose float32 reciprocal floors to 3067. 1/255 in float32 (a Softmax whose maximum is 1) is
  // 0.0039215689, whose reciprocal 254.99998 floors to 254 (onnxruntime would multiply by 254):
  // it moves one ulp down, to a reciprocal of 255.00002.
  EXPECT_EQ(ScaleWithWholeReciprocal(0.000326f), static_cast<float>(1.0 / 3067));
  EXPECT_EQ(std::floor(1.f / (1.f / 255)), 254.f);
  EXPECT_EQ(ScaleWithWholeReciprocal(1.f / 255), std::nextafter(1.f / 255, 0.f));
  EXPECT_EQ(std::floor(1.f / std::nextafter(1.f / 255, 0.f)), 255.f);
  EXPECT_EQ(ScaleWithWholeReciprocal(1.f), 1.f);
  EXPECT_EQ(ScaleWithWholeReciprocal(0.f), 0.f);
  EXPECT_EQ(ScaleWithWholeReciprocal(0x1p-30f), 0x1p-30f);
}

}  // namespace
}  // namespace qfuse::numerics
