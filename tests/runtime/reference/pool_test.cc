// The reference pools on hand-computed cases: padding excluded from the average (or counted
// with count_include_pad), strides, dilations, 3-D windows.
#include "runtime/reference/pool.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::reference {
namespace {

using ir::Tensor;

std::vector<float> Values(const Tensor& t) { return {t.values<float>().begin(), t.values<float>().end()}; }

TEST(ReferencePoolTest, AverageExcludesOrCountsPadding) {
  const Tensor x = Tensor::FromVector<float>({1, 1, 4}, std::vector<float>{1, 2, 3, 4});
  PoolParams p;
  p.kind = PoolParams::Kind::kAverage;
  p.kernel_shape = {3};
  p.strides = {2};
  p.pads = {1, 1};
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, Pool(x, p));
  EXPECT_EQ(Values(y), (std::vector<float>{1.5f, 3}));  // (1 + 2) / 2, (2 + 3 + 4) / 3
  p.count_include_pad = true;
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y_pad, Pool(x, p));
  EXPECT_EQ(Values(y_pad), (std::vector<float>{1, 3}));  // (0 + 1 + 2) / 3
}

TEST(ReferencePoolTest, MaxWithDilationsAnd3dWindow) {
  PoolParams p;
  p.kernel_shape = {2};
  p.dilations = {2};
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, Pool(Tensor::FromVector<float>({1, 1, 6}, std::vector<float>{3, 1, 4, 1, 5, 9}), p));
  EXPECT_EQ(Values(y), (std::vector<float>{4, 1, 5, 9}));
  p.kind = PoolParams::Kind::kAverage;
  p.kernel_shape = {2, 2, 2};
  p.dilations = {};
  QFUSE_ASSERT_OK_AND_ASSIGN(
      Tensor avg, Pool(Tensor::FromVector<float>({1, 1, 2, 2, 2}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}), p));
  EXPECT_EQ(avg.dims(), (std::vector<int64_t>{1, 1, 1, 1, 1}));
  EXPECT_EQ(Values(avg), (std::vector<float>{4.5f}));
  EXPECT_FALSE(Pool(Tensor::FromVector<float>({1, 1, 1}, std::vector<float>{1}), p).ok());  // rank mismatch
}

}  // namespace
}  // namespace qfuse::runtime::reference
