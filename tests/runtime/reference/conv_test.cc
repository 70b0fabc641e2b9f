// The reference Conv, ConvTranspose and integer Conv on hand-computed cases (groups, padding,
// strides, dilations, output_padding, zero points).
#include "runtime/reference/conv.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::reference {
namespace {

using ir::Tensor;

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return {t.values<T>().begin(), t.values<T>().end()};
}

TEST(ReferenceConvTest, GroupedHandComputed) {
  // Channel 0 is 1..9, channel 1 all ones; group 0 sums the 2x2 diagonal, group 1 the whole
  // 2x2 window, plus bias.
  const Tensor x = Tensor::FromVector<float>({1, 2, 3, 3}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9,  //
                                                                              1, 1, 1, 1, 1, 1, 1, 1, 1});
  const Tensor w = Tensor::FromVector<float>({2, 1, 2, 2}, std::vector<float>{1, 0, 0, 1, 1, 1, 1, 1});
  const Tensor b = Tensor::FromVector<float>({2}, std::vector<float>{0, 10});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, Conv(x, w, &b, {2, {}, {}, {}, {}}));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{6, 8, 12, 14, 14, 14, 14, 14}));
}

TEST(ReferenceConvTest, PaddedStridedDilated1d) {
  // x = 1..5, w = [1, 10] dilated 2, stride 2, one zero in front: taps (x[i-1], x[i+1]).
  const Tensor x = Tensor::FromVector<float>({1, 1, 5}, std::vector<float>{1, 2, 3, 4, 5});
  const Tensor w = Tensor::FromVector<float>({1, 1, 2}, std::vector<float>{1, 10});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, Conv(x, w, nullptr, {1, {2}, {2}, {1, 0}, {}}));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{0 + 20, 2 + 40}));
  EXPECT_FALSE(Conv(x, Tensor::FromVector<float>({1, 2, 2}, std::vector<float>(4)), nullptr, {}).ok());
}

TEST(ReferenceConvTest, ConvTransposeOutputPadding) {
  // Stride 2 with a 2x2 kernel: every input pixel becomes x * w in its own 2x2 block;
  // output_padding adds a last row and column holding only the bias.
  const Tensor x = Tensor::FromVector<float>({1, 1, 2, 2}, std::vector<float>{1, 2, 3, 4});
  const Tensor w = Tensor::FromVector<float>({1, 1, 2, 2}, std::vector<float>{1, 2, 3, 4});
  const Tensor b = Tensor::FromVector<float>({1}, std::vector<float>{0.5f});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, ConvTranspose(x, w, &b, {1, {2, 2}, {}, {}, {1, 1}}));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 1, 5, 5}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{1.5, 2.5, 2.5, 4.5, 0.5,  //
                                                  3.5, 4.5, 6.5, 8.5, 0.5,  //
                                                  3.5, 6.5, 4.5, 8.5, 0.5,  //
                                                  9.5, 12.5, 12.5, 16.5, 0.5,  //
                                                  0.5, 0.5, 0.5, 0.5, 0.5}));
}

TEST(ReferenceConvTest, IntegerAccumulatorsSubtractZeroPoints) {
  // 1x1 kernels over [1, 3, 5, 7] with x zero point 8; weight zero points per channel.
  const Tensor x = Tensor::FromVector<uint8_t>({1, 1, 2, 2}, std::vector<uint8_t>{1, 3, 5, 7});
  const Tensor w = Tensor::FromVector<int8_t>({2, 1, 1, 1}, std::vector<int8_t>{3, -2});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor acc, ConvIntegerAccumulators(x, 8, w, {1, 0}, {}));
  EXPECT_EQ(acc.dtype(), ir::DataType::kInt64);
  EXPECT_EQ(Values<int64_t>(acc), (std::vector<int64_t>{-14, -10, -6, -2, 14, 10, 6, 2}));
  EXPECT_FALSE(ConvIntegerAccumulators(x, 0, w, {1, 2, 3}, {}).ok());
}

}  // namespace
}  // namespace qfuse::runtime::reference
