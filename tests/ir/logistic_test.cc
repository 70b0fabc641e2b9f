// ir::Logistic, onnxruntime's float32 logistic: fixed points, accuracy against the exact
// logistic (double precision), NaN passing through, and the AVX2 + FMA row equal to the scalar
// function bit for bit (tails included). That it equals onnxruntime's own Sigmoid is checked
// end to end by the zoo check (models/zoo/ci_zoo.sh: EfficientNet-B0's SiLU units, max |diff| 0).
#include "ir/logistic.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "absl/base/casts.h"
#include "gtest/gtest.h"

namespace qfuse::ir {
namespace {

uint32_t Bits(float f) { return absl::bit_cast<uint32_t>(f); }

TEST(LogisticTest, FixedPointsAndNaN) {
  EXPECT_EQ(Logistic(0.f), 0.5f);  // p = 0 exactly
  EXPECT_TRUE(std::isnan(Logistic(std::numeric_limits<float>::quiet_NaN())));
  // Inputs beyond the clamp give the value at the clamp.
  EXPECT_EQ(Bits(Logistic(100.f)), Bits(Logistic(18.f)));
  EXPECT_EQ(Bits(Logistic(-std::numeric_limits<float>::infinity())), Bits(Logistic(-18.f)));
  EXPECT_GE(Logistic(-18.f), 0.f);
}

TEST(LogisticTest, WithinTwoTenMillionthsOfTheExactLogistic) {
  double worst = 0;
  for (int i = -20000; i <= 20000; ++i) {
    const float x = static_cast<float>(i) * 1e-3f;
    const double exact = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    const float y = Logistic(x);
    worst = std::max(worst, std::abs(static_cast<double>(y) - exact));
    ASSERT_GE(y, 0.f) << x;  // the rational approximation is not monotonic near the clamps
  }
  EXPECT_LT(worst, 2e-7);
}

TEST(LogisticTest, RowEqualsScalarBitForBit) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> wide(-25.f, 25.f);
  std::vector<float> x(1037);  // 129 groups of 8 and a tail of 5
  for (float& v : x) v = wide(rng);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = -std::numeric_limits<float>::infinity();
  x[3] = -0.f;
  x[9] = std::numeric_limits<float>::quiet_NaN();  // inside a vector group
  std::vector<float> y(x.size());
  LogisticRow(x.data(), y.data(), static_cast<int64_t>(x.size()), /*vector=*/true);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i])) << i;
      continue;
    }
    EXPECT_EQ(Bits(y[i]), Bits(Logistic(x[i]))) << "x " << x[i];
  }
  std::vector<float> in_place = x;
  LogisticRow(in_place.data(), in_place.data(), static_cast<int64_t>(in_place.size()), /*vector=*/true);
  for (size_t i = 4; i < x.size(); ++i) {
    if (!std::isnan(x[i])) EXPECT_EQ(Bits(in_place[i]), Bits(y[i]));
  }
}

// SiLU rows: the product of the unclamped x and its logistic, bit for bit as the scalar form,
// in place too (x beyond the logistic's clamp at 18 included).
TEST(LogisticTest, SiluRowEqualsScalarBitForBit) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> wide(-30.f, 30.f);
  std::vector<float> x(1037);
  for (float& v : x) v = wide(rng);
  x[3] = -0.f;
  x[4] = std::numeric_limits<float>::infinity();
  std::vector<float> y(x.size());
  SiluRow(x.data(), y.data(), static_cast<int64_t>(x.size()), /*vector=*/true);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(Bits(y[i]), Bits(x[i] * Logistic(x[i]))) << "x " << x[i];
  std::vector<float> scalar(x.size());  // the capped path, one value at a time
  SiluRow(x.data(), scalar.data(), static_cast<int64_t>(x.size()), /*vector=*/false);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(Bits(scalar[i]), Bits(y[i])) << i;
  std::vector<float> in_place = x;
  SiluRow(in_place.data(), in_place.data(), static_cast<int64_t>(in_place.size()), /*vector=*/true);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(Bits(in_place[i]), Bits(y[i])) << i;
}

}  // namespace
}  // namespace qfuse::ir
