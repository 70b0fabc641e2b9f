// RequantizeOnnxRowFast: its AVX2 path and its portable one against numerics::RequantizeOnnx
// value by value, for int8 and uint8 outputs: random accumulators over the whole int32 range
// and near the clamps, exact ties (acc * multiplier = k + 1/2, where round-half-to-even
// decides), every row length 0-40 (vector steps and tails) and hand-computed values.
#include "runtime/kernels/quant/requantize_row.h"

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "numerics/requantize.h"

namespace qfuse::runtime::kernels::quant {
namespace {

template <typename T>
void ExpectRowsEqualScalar(const std::vector<int32_t>& acc, float multiplier, int32_t zp) {
  for (bool vector : {true, false}) {
    for (size_t n = 0; n <= acc.size(); n = n < 40 ? n + 1 : n * 2 + 1) {
      std::vector<T> got(n);
      RequantizeOnnxRowFast<T>(acc.data(), static_cast<int64_t>(n), multiplier, zp, got.data(), vector);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(int{got[i]}, int{numerics::RequantizeOnnx<T>(acc[i], multiplier, zp)})
            << "acc " << acc[i] << " multiplier " << multiplier << " zp " << zp << " n " << n << " vector " << vector;
      }
    }
  }
}

TEST(RequantizeRowTest, EqualsRequantizeOnnx) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int32_t> near(-4000, 4000);
  for (float multiplier : {0.0123f, 0.5f, 1.f / 3.f, 2.5e-4f, 7.f}) {
    std::vector<int32_t> acc(1000);
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = i % 3 == 0 ? any(rng) : near(rng);
    for (int32_t zp : {0, 3, -128, 127}) ExpectRowsEqualScalar<int8_t>(acc, multiplier, zp);
    for (int32_t zp : {0, 128, 255, 17}) ExpectRowsEqualScalar<uint8_t>(acc, multiplier, zp);
  }
  // Ties: multiplier 0.5 puts every odd accumulator on k + 1/2.
  std::vector<int32_t> ties;
  for (int32_t a = -300; a <= 300; ++a) ties.push_back(a);
  ExpectRowsEqualScalar<int8_t>(ties, 0.5f, 0);
  ExpectRowsEqualScalar<uint8_t>(ties, 0.5f, 128);
}

TEST(RequantizeRowTest, HandComputedValues) {
  // 0.5 * {-5, -3, -1, 1, 3, 5, 7, 9, 600, -600} = -2.5, -1.5, -0.5,
  // 0.5, 1.5, 2.5, 3.5, 4.5, 300, -300; half to even: -2, -2, -0, 0, 2, 2, 4,
  // 4; +10; the last two clamp to 127 and -128.
  const std::vector<int32_t> acc = {-5, -3, -1, 1, 3, 5, 7, 9, 600, -600};
  std::vector<int8_t> got(acc.size());
  RequantizeOnnxRowFast<int8_t>(acc.data(), static_cast<int64_t>(acc.size()), 0.5f, 10, got.data());
  EXPECT_EQ(got, (std::vector<int8_t>{8, 8, 10, 10, 12, 12, 14, 14, 127, -128}));
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant
