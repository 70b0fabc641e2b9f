// Weight and bias quantization on hand-computed cases.
#include "quant/weight_quantizer.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::quant {
namespace {

using ir::Tensor;

TEST(WeightQuantizerTest, PerChannelMaxAbsAndHalfEvenRounding) {
  // Two output channels (axis 0) of 3 weights with max |w| = 127 * 2^-7 and 127 * 2^-9,
  // so the scales 2^-7 and 2^-9 and every ratio below are exact in float.
  const float s0 = 1.f / 128, s1 = 1.f / 512;
  Tensor w = Tensor::FromVector<float>({2, 3}, std::vector<float>{127 * s0, -63.5f * s0, 0.5f * s0, 127 * s1,
                                                                  -0.5f * s1, 1.5f * s1});
  Tensor b = Tensor::FromVector<float>({2}, std::vector<float>{100 * 0.5f * s0, -250 * 0.5f * s1});
  WeightQuantizeRequest req{&w, &b, /*input_scale=*/0.5f, /*per_channel=*/true, /*channel_axis=*/0};
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights q, QuantizeWeightsAndBias(req));
  EXPECT_EQ(q.weight_scales.data<float>()[0], s0);
  EXPECT_EQ(q.weight_scales.data<float>()[1], s1);
  const int8_t* qw = q.weights.data<int8_t>();
  EXPECT_EQ(qw[0], 127);
  EXPECT_EQ(qw[1], -64);  // -63.5 rounds half to even
  EXPECT_EQ(qw[2], 0);    // 0.5 rounds half to even
  EXPECT_EQ(qw[3], 127);
  EXPECT_EQ(qw[4], 0);    // -0.5 -> 0
  EXPECT_EQ(qw[5], 2);    // 1.5 -> 2
  // Bias scale = input scale * weight scale.
  EXPECT_EQ(q.bias_scales.data<float>()[0], 0.5f * s0);
  EXPECT_EQ(q.bias.data<int32_t>()[0], 100);
  EXPECT_EQ(q.bias.data<int32_t>()[1], -250);
  EXPECT_EQ(q.widened_channels, 0);
}

TEST(WeightQuantizerTest, PerTensorAxisOneAndZeroChannel) {
  // Gemm weight [K=2, N=3] with transB 0: channels along axis 1; channel 2 all zero.
  Tensor w = Tensor::FromVector<float>({2, 3}, std::vector<float>{1.f, 2.f, 0.f, -1.f, 0.5f, 0.f});
  WeightQuantizeRequest req{&w, nullptr, 1.f, true, 1};
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights q, QuantizeWeightsAndBias(req));
  EXPECT_FLOAT_EQ(q.weight_scales.data<float>()[0], 1.f / 127);
  EXPECT_FLOAT_EQ(q.weight_scales.data<float>()[1], 2.f / 127);
  EXPECT_EQ(q.weight_scales.data<float>()[2], 1.f);  // safe scale for an all-zero channel
  EXPECT_EQ(q.weights.data<int8_t>()[4], 32);          // 0.5 / (2/127) = 31.75
  req.per_channel = false;
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights t, QuantizeWeightsAndBias(req));
  ASSERT_EQ(t.weight_scales.num_elements(), 1);
  EXPECT_FLOAT_EQ(t.weight_scales.data<float>()[0], 2.f / 127);
}

// reduce_range: scale max|w| / 64 and weights in [-64, 64] (onnxruntime's 7-bit convention),
// and the bias budget counts 64 per product instead of 127.
TEST(WeightQuantizerTest, ReduceRangeGivesSevenBitWeights) {
  const float s = 1.f / 256;  // max|w| = 64 * 2^-8: scale 2^-8, every ratio below exact
  Tensor w = Tensor::FromVector<float>({1, 5}, std::vector<float>{64 * s, -64 * s, 31.5f * s, -32.5f * s, 0.25f * s});
  WeightQuantizeRequest req{&w, nullptr, 1.f, true, 0};
  req.reduce_range = true;
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights q, QuantizeWeightsAndBias(req));
  EXPECT_EQ(q.weight_scales.data<float>()[0], s);
  const int8_t* qw = q.weights.data<int8_t>();
  EXPECT_EQ(qw[0], 64);
  EXPECT_EQ(qw[1], -64);
  EXPECT_EQ(qw[2], 32);   // 31.5 rounds half to even
  EXPECT_EQ(qw[3], -32);  // -32.5 rounds half to even
  EXPECT_EQ(qw[4], 0);
  // K * 128 * 64 products fit where K * 128 * 127 would not: no infinite widening.
  req.num_products = (int64_t{1} << 31) / (128 * 127) + 1;
  req.max_abs_input = 128;
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights fits, QuantizeWeightsAndBias(req));
  EXPECT_EQ(fits.max_widening, 1);
  req.reduce_range = false;
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights overflows, QuantizeWeightsAndBias(req));
  EXPECT_TRUE(std::isinf(overflows.max_widening));
}

TEST(WeightQuantizerTest, BiasThatWouldOverflowInt32WidensItsChannel) {
  Tensor w = Tensor::FromVector<float>({2, 1}, std::vector<float>{1e-6f, 1.f});
  Tensor b = Tensor::FromVector<float>({2}, std::vector<float>{1000.f, 1.f});
  WeightQuantizeRequest req{&w, &b, 1e-4f, true, 0};
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights q, QuantizeWeightsAndBias(req));
  EXPECT_EQ(q.widened_channels, 1);
  // 1000 / (1e-4 * s) must fit: s >= 1000 / (1e-4 * (2^31 - 2)).
  EXPECT_GE(q.weight_scales.data<float>()[0], 1000.0 / (1e-4 * 2147483646.0));
  EXPECT_LE(std::abs(static_cast<int64_t>(q.bias.data<int32_t>()[0])), int64_t{2147483647});
  EXPECT_GT(q.bias.data<int32_t>()[0], 2000000000);
  EXPECT_EQ(q.weight_scales.data<float>()[1], 1.f / 127);
}

// The integer kernels need K * max|x - zp| * 127 + |bias_q| <= 2^31 - 1, not only |bias_q| <=
// 2^31 - 1: a bias that fits int32 alone (the real detector's 2147481532 with K = 192) widens.
TEST(WeightQuantizerTest, BiasLeavesRoomForTheWorstCaseAccumulation) {
  Tensor w = Tensor::FromVector<float>({2, 1}, std::vector<float>{1.f, 1.f});
  const float s = 1.f / 127;  // both channels' max-abs scale
  Tensor b = Tensor::FromVector<float>({2}, std::vector<float>{2147481532.f * s, 1000.f * s});
  WeightQuantizeRequest req{&w, &b, 1.f, true, 0};
  req.num_products = 192;
  req.max_abs_input = 128;
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights q, QuantizeWeightsAndBias(req));
  EXPECT_EQ(q.widened_channels, 1);
  const int64_t products = int64_t{192} * 128 * 127;
  EXPECT_LE(products + std::abs(static_cast<int64_t>(q.bias.data<int32_t>()[0])), int64_t{2147483647});
  EXPECT_GT(q.max_widening, 1.0);
  EXPECT_LT(q.max_widening, 1.01);  // 3.1M of 2.1G: under 1% wider
  EXPECT_NEAR(WideningCostDb(q.max_widening), 20 * std::log10(q.max_widening), 1e-12);
  // The widened channel's output moves by at most K * 128 * (s_w / 2) * 1 / |bias| of its bias:
  // about 192 * 128 / (2 * (2^31 - 1 - products)), 5.7e-6.
  const double s_w = q.weight_scales.data<float>()[0];
  EXPECT_DOUBLE_EQ(q.widened_output_error, 192.0 * 128 * 0.5 * s_w / b.data<float>()[0]);
  EXPECT_NEAR(q.widened_output_error, 192.0 * 128 / (2 * (2147483646.0 - products)), 1e-9);
  EXPECT_EQ(q.weight_scales.data<float>()[1], s);  // the small bias leaves its channel alone
  EXPECT_EQ(q.bias.data<int32_t>()[1], 1000);
  // When the products alone can exceed int32 no scale helps.
  req.num_products = 200000;
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights none, QuantizeWeightsAndBias(req));
  EXPECT_TRUE(std::isinf(none.max_widening));
  EXPECT_TRUE(std::isinf(none.widened_output_error));
}

// With one weight scale for the tensor (per-tensor weights) a widening forced by one output's
// bias coarsens every output: the bound judges them all, so an output with a zero bias gives no
// bound (+inf) and one with a small bias a large one, and max_widening is against the max-abs
// scale. A bias that is not finite gives +inf (the layer stays float). The bias is checked
// against the float32 bias scale the graph carries, which can round below s_x * s_w in double
// (a case a helper's review found: the int32 sum then exceeded 2^31 - 1 by 33).
TEST(WeightQuantizerTest, PerTensorWideningNonFiniteBiasAndTheFloatBiasScale) {
  Tensor w = Tensor::FromVector<float>({2, 4}, std::vector<float>{1e-3f, 0, 0, 0, 0.5f, -0.3f, 0.2f, 0.1f});
  for (float other : {0.f, 1e6f}) {
    SCOPED_TRACE(other);
    Tensor b = Tensor::FromVector<float>({2}, std::vector<float>{1e7f, other});
    WeightQuantizeRequest req{&w, &b, 0.02f, /*per_channel=*/false, 0};
    req.num_products = 4;
    QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights q, QuantizeWeightsAndBias(req));
    const double s = q.weight_scales.data<float>()[0];
    EXPECT_NEAR(q.max_widening, s / (0.5 / 127), 1e-6 * q.max_widening);
    if (other == 0.f) {
      EXPECT_TRUE(std::isinf(q.widened_output_error));
    } else {
      EXPECT_DOUBLE_EQ(q.widened_output_error, 4.0 * 128 * 0.5 * s * 0.02f / 1e6);
    }
  }
  Tensor inf_b = Tensor::FromVector<float>({2}, std::vector<float>{std::numeric_limits<float>::infinity(), 0.f});
  WeightQuantizeRequest inf_req{&w, &inf_b, 0.02f, true, 0};
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights inf_q, QuantizeWeightsAndBias(inf_req));
  EXPECT_TRUE(std::isinf(inf_q.widened_output_error));
  Tensor w1 = Tensor::FromVector<float>({1, 1}, std::vector<float>{0.158048674f});
  Tensor b1 = Tensor::FromVector<float>({1}, std::vector<float>{50672.5508f});
  WeightQuantizeRequest req1{&w1, &b1, 0.0189883597f, true, 0};
  req1.num_products = 192;
  req1.max_abs_input = 128;
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights q1, QuantizeWeightsAndBias(req1));
  EXPECT_LE(int64_t{192} * 128 * 127 + std::abs(static_cast<int64_t>(q1.bias.data<int32_t>()[0])), int64_t{2147483647});
}

// Dead channels of a trained model (PaddleOCR's PP-OCRv4 recogniser: max|w| 3.1e-39, a denormal,
// and 1.1e-15 with bias -1.4e-9 beside channels of max|w| near 0.1) get the scale floor,
// float32's epsilon, not max|w| / 127: their weights quantize to 0, their int32 biases stay
// small, and every bias scale s_x * s_w is a normal float. A live channel keeps max|w| / 127.
TEST(WeightQuantizerTest, DeadChannelsGetTheScaleFloor) {
  const float denormal = 3.1e-39f, tiny = 1.1e-15f, live = 0.127f;
  ASSERT_EQ(std::fpclassify(denormal), FP_SUBNORMAL);
  Tensor w =
      Tensor::FromVector<float>({3, 2}, std::vector<float>{denormal, -denormal / 2, -tiny, tiny / 4, live, -0.1f});
  Tensor b = Tensor::FromVector<float>({3}, std::vector<float>{-9.3e-40f, -1.4e-9f, 0.25f});
  const float x_scale = 0.0028f;
  WeightQuantizeRequest req{&w, &b, x_scale, true, 0};
  req.num_products = 2;
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizedWeights q, QuantizeWeightsAndBias(req));
  EXPECT_EQ(kMinWeightScale, std::numeric_limits<float>::epsilon());
  EXPECT_EQ(q.weight_scales.data<float>()[0], kMinWeightScale);
  EXPECT_EQ(q.weight_scales.data<float>()[1], kMinWeightScale);
  EXPECT_EQ(q.weight_scales.data<float>()[2], live / 127);
  EXPECT_EQ(q.widened_channels, 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.weights.data<int8_t>()[i], 0) << i;
  EXPECT_EQ(q.weights.data<int8_t>()[4], 127);
  // -1.4e-9 / (0.0028 * 2^-23) = -4.19 -> -4; the denormal bias -> 0.
  EXPECT_EQ(q.bias.data<int32_t>()[0], 0);
  EXPECT_EQ(q.bias.data<int32_t>()[1], -4);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(std::fpclassify(q.bias_scales.data<float>()[c]), FP_NORMAL) << c;
}

}  // namespace
}  // namespace qfuse::quant
