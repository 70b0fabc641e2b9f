// ir::Erf and ir::Gelu, onnxruntime's float32 erf and fused Gelu: fixed points, accuracy
// against the exact functions (double precision), the clamp onnxruntime 1.30 uses (erf is
// exactly 1 from |x| = 3.9191988 on, as onnxruntime gives it; with the older 3.725 clamp it
// stayed at 0.99999988), and the AVX2 + FMA rows equal to the scalar functions bit for bit
// (tails, NaN, infinities and -0 included). That they equal onnxruntime's own kernels on
// 2^20 values is models/zoo/erf_probe.py's check.
#include "ir/erf.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/float_bits.h"

namespace qfuse::ir {
namespace {

using testing::Bits;

TEST(ErfTest, FixedPointsAndTheClamp) {
  EXPECT_EQ(Bits(Erf(0.f)), Bits(0.f));
  EXPECT_EQ(Bits(Erf(-0.f)), Bits(-0.f));
  EXPECT_EQ(Erf(std::numeric_limits<float>::infinity()), 1.f);
  EXPECT_EQ(Erf(-std::numeric_limits<float>::infinity()), -1.f);
  EXPECT_EQ(Erf(10.f), 1.f);
  EXPECT_EQ(Erf(3.9191988f), 1.f);
  EXPECT_LT(Erf(3.9191797f), 1.f);
  EXPECT_EQ(Erf(-3.9191988f), -1.f);
  // A NaN is clamped like an infinity and keeps its sign bit.
  EXPECT_EQ(Erf(std::numeric_limits<float>::quiet_NaN()), 1.f);
  EXPECT_EQ(Bits(Gelu(0.f)), Bits(0.f));
  EXPECT_EQ(Gelu(10.f), 10.f);
}

TEST(ErfTest, WithinTwoUlpsOfTheExactErfAndGelu) {
  double worst_erf = 0, worst_gelu = 0;
  for (int i = -60000; i <= 60000; ++i) {
    const float x = static_cast<float>(i) * 1e-4f;
    const double xd = x;
    worst_erf = std::max(worst_erf, std::abs(Erf(x) - std::erf(xd)));
    const double gelu = 0.5 * xd * (1.0 + std::erf(xd / std::sqrt(2.0)));
    worst_gelu = std::max(worst_gelu, std::abs(Gelu(x) - gelu) / std::max(1.0, std::abs(gelu)));
  }
  EXPECT_LT(worst_erf, 1.2e-7);
  EXPECT_LT(worst_gelu, 2.4e-7);
}

TEST(ErfTest, RowsEqualScalarsBitForBit) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> wide(-6.f, 6.f);
  std::vector<float> x(1037);  // 64 groups of 16, one of 8 and a tail of 5
  for (float& v : x) v = wide(rng);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = -std::numeric_limits<float>::infinity();
  x[3] = -0.f;
  x[4] = ErfConstants::kSplit;
  x[5] = std::nextafter(ErfConstants::kSplit, 1.f);
  x[9] = -std::numeric_limits<float>::quiet_NaN();  // inside a vector group
  x[10] = 1e-30f;
  x[11] = -3.925f;
  for (bool gelu : {false, true}) {
    for (int lanes : {16, 8, 1}) {  // AVX-512 then AVX2 then scalar tail; AVX2 and tail; scalar
      const bool vector = lanes > 1, wide = lanes == 16;
      std::vector<float> y(x.size());
      (gelu ? GeluRow : ErfRow)(x.data(), y.data(), static_cast<int64_t>(x.size()), vector, wide);
      for (size_t i = 0; i < x.size(); ++i) {
        const float want = gelu ? Gelu(x[i]) : Erf(x[i]);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(y[i])) << i;
          continue;
        }
        EXPECT_EQ(Bits(y[i]), Bits(want)) << (gelu ? "gelu" : "erf") << " x " << x[i] << " lanes " << lanes;
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::ir
