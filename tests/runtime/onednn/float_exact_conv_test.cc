// The float32 path for small-K integer convolutions (runtime/onednn/float_exact_conv.h)
// against the scalar reference convolution: equal int32 accumulators for the first layers'
// shapes (1 and 3 input channels, 3x3 and 7x7 stride 2 with asymmetric pads), groups with
// dilation, uint8 and int8 sources (flipped to uint8) at several zero points, and a K near
// the largest the 2^24 bound admits at full-range weights; and the bound itself.
#include "runtime/onednn/float_exact_conv.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/kernels/linalg/conv_attrs.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/reference/conv.h"
#include "tests/runtime/onednn/conv_case.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

using testing::Bytes;

TEST(FloatSumsAreExactTest, TheBoundIsTwoToThe24) {
  // |w| = 128 at |x - zp| = 255: 514 taps sum to at most 16776960 < 2^24 = 16777216, 515 taps
  // to 16809600.
  const std::vector<uint8_t> w514(514, 0x80), w515(515, 0x80);
  EXPECT_TRUE(FloatSumsAreExact(Bytes(ir::DataType::kInt8, {1, 2, 1, 257}, w514), 255));
  EXPECT_FALSE(FloatSumsAreExact(Bytes(ir::DataType::kInt8, {1, 5, 1, 103}, w515), 255));
  EXPECT_TRUE(FloatSumsAreExact(Bytes(ir::DataType::kInt8, {1, 5, 1, 103}, w515), 128));
  EXPECT_FALSE(FloatSumsAreExact(Bytes(ir::DataType::kUint8, {1, 2, 1, 257}, w514), 255));  // int8 weights only
}

using Case = testing::ConvCase;

class FloatExactConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(FloatExactConvTest, EqualsReferenceAccumulators) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used on this CPU";
  const Case k = GetParam();
  const testing::ConvData data = testing::RandomConvData(k, static_cast<uint32_t>(k.c * 31 + k.kh));
  const std::vector<uint8_t>& x = data.x;
  const ir::Tensor& weights = data.weights;
  ASSERT_TRUE(FloatSumsAreExact(weights, 255));
  const reference::ConvParams params = testing::ReferenceParams(k);
  const kernels::linalg::ConvAttrs attrs = testing::KernelAttrs(k);
  FloatExactConv conv(attrs, weights);
  const std::vector<uint8_t> x_nhwc = testing::ToNhwc(x, k);
  for (bool is_signed : {false, true}) {
    for (int32_t zp : is_signed ? std::vector<int32_t>{0, -60} : std::vector<int32_t>{0, 37, 255}) {
      const ir::DataType type = is_signed ? ir::DataType::kInt8 : ir::DataType::kUint8;
      QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor want, reference::ConvIntegerAccumulators(
                                                      Bytes(type, {k.n, k.c, k.h, k.w}, x), zp, weights, {0}, params));
      const std::vector<int64_t>& o = want.dims();  // [N, M, OH, OW]
      const int64_t plane = o[2] * o[3];
      std::vector<int32_t> acc(static_cast<size_t>(k.n * plane * k.m), 0x5A5A5A5A);
      // int8 bytes reach oneDNN flipped to uint8 with zero point + 128, as in the kernel.
      QFUSE_ASSERT_OK(conv.Accumulate(x_nhwc.data(), is_signed ? 0x80 : 0, zp + (is_signed ? 128 : 0),
                                      {k.n, k.c, k.h, k.w}, acc.data()));
      for (int64_t p = 0; p < k.n * plane; ++p) {
        for (int64_t oc = 0; oc < k.m; ++oc) {
          ASSERT_EQ(acc[p * k.m + oc], want.data<int64_t>()[((p / plane) * k.m + oc) * plane + p % plane])
              << "pixel " << p << " channel " << oc << " zp " << zp << (is_signed ? " int8" : " uint8");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, FloatExactConvTest,
    ::testing::Values(Case{3, 1, 28, 28, 16, 3, 3, 1, 1, 1, 1, 1},   // one-channel stem
                      Case{2, 3, 23, 21, 32, 3, 3, 1, 2, 1, 1, 0},   // RGB stem 3x3 stride 2, asymmetric pads
                      Case{1, 3, 19, 19, 64, 7, 7, 1, 2, 1, 3, 2},   // RGB stem 7x7 stride 2 (K = 147)
                      Case{1, 8, 10, 10, 16, 3, 3, 2, 1, 2, 2, 2},   // two groups, dilation 2
                      Case{2, 56, 6, 5, 24, 3, 3, 1, 1, 1, 1, 1}     // K = 504, near the bound
                      ));

}  // namespace
}  // namespace qfuse::runtime::onednn
