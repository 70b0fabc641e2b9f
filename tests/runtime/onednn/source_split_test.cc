// The split source (runtime/onednn/source_split.h) against the scalar reference convolution:
// the accumulator of the 7-bit part lo (zero point zp - o, what oneDNN computes) plus the
// outliers added back must equal the reference accumulator of x itself, for every geometry
// (padding, strides, dilations, groups, depthwise), zero point and source type, with sources
// dense in outliers on both sides of the window. oneDNN's share is checked on real graphs by
// qlinear_conv_kernel_test.
#include "runtime/onednn/source_split.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/linalg/conv_attrs.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/reference/conv.h"
#include "tests/runtime/onednn/conv_case.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

TEST(SplitSourceOffsetTest, WindowSitsOnTheZeroPointSide) {
  EXPECT_EQ(SplitSourceOffset(0), 0);      // post-ReLU: [0, 127]
  EXPECT_EQ(SplitSourceOffset(64), 0);
  EXPECT_EQ(SplitSourceOffset(100), 36);
  EXPECT_EQ(SplitSourceOffset(128), 64);   // symmetric: [64, 191]
  EXPECT_EQ(SplitSourceOffset(255), 128);  // [128, 255]
}

TEST(SplitSourceTest, HandComputedBytesAndOutliers) {
  testing::IsaCapGuard guard;
  // Two pixels of 3 channels, int8 bytes flipped to uint8 (x ^ 0x80), window [64, 191].
  const std::vector<int8_t> x = {0, -100, 100, 63, -64, -65};
  // Flipped: 128, 28, 228, 191, 64, 63 -> minus 64: 64, -36, 164, 127, 0, -1.
  for (Isa cap : {Isa::kAvx2, Isa::kScalar}) {
    if (cap > MaxIsa()) continue;
    SetIsaCap(cap);
    std::vector<uint8_t> lo(6);
    SourceOutliers out;
    // Twice into the same struct: the second call must not keep anything of the first.
    for (int call = 0; call < 2; ++call) {
      SplitSource(reinterpret_cast<const uint8_t*>(x.data()), 0x80, 64, /*pixels=*/2, /*channels=*/3, lo.data(), &out);
    }
    EXPECT_EQ(lo, (std::vector<uint8_t>{64, 0, 127, 127, 0, 0})) << IsaName(cap);
    ASSERT_EQ(out.total, 3);
    ASSERT_EQ(out.pixels.size(), 2u);
    EXPECT_EQ(out.pixels[0].pixel, 0);
    EXPECT_EQ(out.pixels[0].count, 2);
    EXPECT_EQ(out.pixels[1].pixel, 1);
    EXPECT_EQ(out.pixels[1].count, 1);
    const std::vector<SourceOutliers::Entry>& e = out.chunks[0];
    EXPECT_EQ(e[0].channel, 1);
    EXPECT_EQ(static_cast<int16_t>(e[0].delta), -36);
    EXPECT_EQ(e[1].channel, 2);
    EXPECT_EQ(static_cast<int16_t>(e[1].delta), 37);  // 164 - 127
    EXPECT_EQ(e[out.pixels[1].begin].channel, 2);
    EXPECT_EQ(static_cast<int16_t>(e[out.pixels[1].begin].delta), -1);
  }
}

using Case = testing::ConvCase;
using testing::Bytes;

class SplitSourceConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(SplitSourceConvTest, LoAccumulatorPlusOutliersEqualsReference) {
  testing::IsaCapGuard guard;
  const Case k = GetParam();
  // Weight -128 included: the weight a 7-bit source exists for.
  const testing::ConvData data = testing::RandomConvData(k, static_cast<uint32_t>(k.c * 131 + k.kh * 7 + k.group));
  const std::vector<uint8_t>& x = data.x;
  const ir::Tensor& weights = data.weights;
  const reference::ConvParams params = testing::ReferenceParams(k);
  const kernels::linalg::ConvAttrs attrs = testing::KernelAttrs(k);
  QFUSE_ASSERT_OK_AND_ASSIGN(kernels::linalg::ConvGeometry g,
                             kernels::linalg::ResolveConv(attrs, std::vector<int64_t>{k.h, k.w},
                                                          std::vector<int64_t>{k.kh, k.kw}));
  const SplitSourceWeights split_weights = PrepareSplitSourceWeights(weights, k.group);
  const std::vector<uint8_t> x_nhwc = testing::ToNhwc(x, k);
  const int64_t pixels = k.n * g.col[1] * g.col[2];
  SourceOutliers outliers;  // reused by every call below, as the kernel reuses its own
  for (bool is_signed : {false, true}) {
    // Unsigned sources use zero points {0, 37, 200}; signed ones are the same bytes as int8,
    // zero points {0, -60}, flipped to uint8 (zero point + 128) before the split.
    for (int32_t zp : is_signed ? std::vector<int32_t>{0, -60} : std::vector<int32_t>{0, 37, 200}) {
      const ir::DataType type = is_signed ? ir::DataType::kInt8 : ir::DataType::kUint8;
      QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor want, reference::ConvIntegerAccumulators(
                                                      Bytes(type, {k.n, k.c, k.h, k.w}, x), zp, weights, {0}, params));
      const int32_t zp_u8 = zp + (is_signed ? 128 : 0);
      const int32_t offset = SplitSourceOffset(zp_u8);
      for (Isa cap : {Isa::kAvx2, Isa::kScalar}) {
        if (cap > MaxIsa()) continue;
        SetIsaCap(cap);
        std::vector<uint8_t> lo_nhwc(x.size());
        SplitSource(x_nhwc.data(), is_signed ? 0x80 : 0, offset, k.n * k.h * k.w, k.c, lo_nhwc.data(), &outliers);
        int64_t outside = 0;
        for (uint8_t v : x) {
          const int32_t u = (is_signed ? v ^ 0x80 : v) - offset;
          outside += u < 0 || u > 127;
        }
        ASSERT_EQ(outliers.total, outside);
        ASSERT_GT(outside, static_cast<int64_t>(x.size()) / 5);  // dense: the correction is exercised
        // lo back to NCHW for the reference: oneDNN's share, sum (lo - (zp_u8 - offset)) * w.
        std::vector<uint8_t> lo(x.size());
        for (int64_t n = 0; n < k.n; ++n)
          for (int64_t c = 0; c < k.c; ++c)
            for (int64_t i = 0; i < k.h * k.w; ++i)
              lo[(n * k.c + c) * k.h * k.w + i] = lo_nhwc[(n * k.h * k.w + i) * k.c + c];
        QFUSE_ASSERT_OK_AND_ASSIGN(
            ir::Tensor part, reference::ConvIntegerAccumulators(Bytes(ir::DataType::kUint8, {k.n, k.c, k.h, k.w}, lo),
                                                                zp_u8 - offset, weights, {0}, params));
        const int64_t plane = g.col[1] * g.col[2];
        std::vector<int32_t> acc(static_cast<size_t>(pixels * k.m));
        for (int64_t p = 0; p < pixels; ++p)
          for (int64_t oc = 0; oc < k.m; ++oc)
            acc[p * k.m + oc] = static_cast<int32_t>(part.data<int64_t>()[((p / plane) * k.m + oc) * plane + p % plane]);
        // In ranges, as the output stage's tasks call it: uneven ones that start and end
        // inside rows and images, and single pixels.
        for (int64_t p0 = 0, step = 1; p0 < pixels; p0 += step, step = step * 3 % 23 + 1) {
          const int64_t p1 = std::min(pixels, p0 + step);
          AddSourceOutliers(g, outliers, split_weights, p0, p1, acc.data() + p0 * k.m);
        }
        for (int64_t p = 0; p < pixels; ++p) {
          for (int64_t oc = 0; oc < k.m; ++oc) {
            ASSERT_EQ(acc[p * k.m + oc], want.data<int64_t>()[((p / plane) * k.m + oc) * plane + p % plane])
                << "pixel " << p << " channel " << oc << " zp " << zp << (is_signed ? " int8" : " uint8") << " at "
                << IsaName(cap);
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, SplitSourceConvTest,
    ::testing::Values(Case{2, 16, 9, 7, 24, 3, 3, 1, 1, 1, 1, 1},    // 3x3 same, 24 outputs (8 + 8 + 8)
                      Case{1, 3, 17, 17, 13, 7, 7, 1, 2, 1, 3, 2},   // stem-like, asymmetric pads, 289 pixels (2 chunks)
                      Case{2, 40, 6, 6, 20, 1, 1, 1, 1, 1, 0, 0},    // pointwise, 40 channels (a 32-byte run + tail)
                      Case{1, 8, 10, 10, 16, 3, 3, 2, 1, 2, 2, 2},   // two groups, dilation 2
                      Case{1, 300, 5, 5, 300, 3, 3, 300, 2, 1, 1, 1}  // depthwise, stride 2, 300 channels
                      ));

// The probe reads the first 64 bytes of every 16384 and calls the source dense when more than
// 1 in 8 of them lie outside the window: 8 of 64 is not, 9 is; bytes between the probes are
// not read; the flip and the offset move the window. Hand-counted.
TEST(DenseSplitOutliersTest, CountsProbedBytesOutsideTheWindow) {
  std::vector<uint8_t> x(20000, 10);
  for (int i = 0; i < 8; ++i) x[i] = 200;
  EXPECT_FALSE(DenseSplitOutliers(x.data(), 64, 0, 0));
  x[8] = 128;
  EXPECT_TRUE(DenseSplitOutliers(x.data(), 64, 0, 0));
  // Probes at 0 and 16384 (64 bytes each): 9 of 128 outside.
  EXPECT_FALSE(DenseSplitOutliers(x.data(), static_cast<int64_t>(x.size()), 0, 0));
  for (int i = 64; i < 16384; ++i) x[i] = 255;  // between the probes: unseen
  EXPECT_FALSE(DenseSplitOutliers(x.data(), static_cast<int64_t>(x.size()), 0, 0));
  for (int i = 16384; i < 16384 + 8; ++i) x[i] = 255;
  EXPECT_TRUE(DenseSplitOutliers(x.data(), static_cast<int64_t>(x.size()), 0, 0));  // 17 of 128
  // 10 ^ 0x80 = 138: every byte outside [0, 127] but inside [64, 191].
  const std::vector<uint8_t> tens(64, 10);
  EXPECT_TRUE(DenseSplitOutliers(tens.data(), 64, 0x80, 0));
  EXPECT_FALSE(DenseSplitOutliers(tens.data(), 64, 0x80, 64));
  EXPECT_TRUE(DenseSplitOutliers(tens.data(), 64, 0, 64));  // 10 < 64
}

}  // namespace
}  // namespace qfuse::runtime::onednn
