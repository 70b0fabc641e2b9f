// BatchNormalization, InstanceNormalization, LayerNormalization and LRN against
// hand-computed values.
#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "tests/runtime/kernels/nn/nn_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::nn_test {
namespace {

std::vector<NodeInput> BatchNormInputs(Tensor x) {
  return {{"x", std::move(x)},
          {"scale", Floats({2}, {2.0f, 0.5f}), true},
          {"bias", Floats({2}, {0.1f, -1.0f}), true},
          {"mean", Floats({2}, {1.0f, 2.0f}), true},
          {"var", Floats({2}, {4.0f, 0.25f}), true}};
}

// Channel 0: (x - 1) / 2 * 2 + 0.1; channel 1: (x - 2) / 0.5 * 0.5 - 1.
TEST(BatchNormTest, PerChannelInferenceAndDynamicBatch) {
  ir::Graph graph;
  QFUSE_ASSERT_OK(BuildOneNode(&graph, "BatchNormalization", BatchNormInputs(Floats({1, 2, 1, 2}, {0, 0, 0, 0})),
                               Attrs({{"epsilon", 0.0f}}), 1));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(graph));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> one, exec->Run({{"x", Floats({1, 2, 1, 2}, {1, 2, 3, 4})}}));
  ExpectFloatsNear(one[0].tensor, {1, 2, 1, 2}, {0.1f, 1.1f, 0.0f, 1.0f});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> two,
                             exec->Run({{"x", Floats({2, 2, 1, 2}, {1, 2, 3, 4, 3, 5, 2, 6})}}));
  ExpectFloatsNear(two[0].tensor, {2, 2, 1, 2}, {0.1f, 1.1f, 0.0f, 1.0f, 2.1f, 4.1f, -1.0f, 3.0f});
}

// Zero variance: only the default epsilon 1e-5 keeps the result finite, 1 / sqrt(1e-5).
TEST(BatchNormTest, DefaultEpsilonIsApplied) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, RunNode("BatchNormalization",
                                                            {{"x", Floats({1, 1}, {1})},
                                                             {"scale", Floats({1}, {1}), true},
                                                             {"bias", Floats({1}, {0}), true},
                                                             {"mean", Floats({1}, {0}), true},
                                                             {"var", Floats({1}, {0}), true}}));
  ExpectFloatsNear(y[0], {1, 1}, {316.22777f});
}

// Batch statistics over N and spatial: mean 4, population variance 5.
// Inference is onnxruntime's float32 sequence bit for bit: inv_std = 1 / sqrt(var + eps),
// a = inv_std * scale, b = B - mean * a, y = x * a + b. Values with awkward float statistics
// (var 0.11, mean 0.7, scale 1.3), where the same formula in double rounded to float gives
// another a and b.
TEST(BatchNormTest, InferenceIsOnnxruntimesFloatSteps) {
  const float scale = 1.3f, bias = -0.2f, mean = 0.7f, var = 0.11f, eps = 1e-5f;
  std::vector<float> xs;
  for (int i = 0; i < 4096; ++i) xs.push_back(-4.f + 8.f * static_cast<float>(i) / 4096.f + 1e-4f);
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y,
      RunNode("BatchNormalization",
              {{"x", Floats({1, 1, 4096}, xs)},
               {"scale", Floats({1}, {scale}), true},
               {"bias", Floats({1}, {bias}), true},
               {"mean", Floats({1}, {mean}), true},
               {"var", Floats({1}, {var}), true}},
              Attrs({{"epsilon", eps}})));
  const float inv_std = 1.f / std::sqrt(var + eps);
  const float a = inv_std * scale;
  const float b = bias - mean * a;
  const double a_double = scale / std::sqrt(static_cast<double>(var) + eps);
  const float a_rounded = static_cast<float>(a_double);
  const float b_rounded = static_cast<float>(bias - mean * a_double);
  EXPECT_NE(a_rounded, a);  // the double-rounded constants differ here: the check below can fail
  int double_differs = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(y[0].values<float>()[i], xs[i] * a + b) << xs[i];
    double_differs += xs[i] * a_rounded + b_rounded != xs[i] * a + b;
  }
  EXPECT_GT(double_differs, 0);
}

TEST(BatchNormTest, TrainingModeUsesBatchStatistics) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y,
      RunNode("BatchNormalization",
              {{"x", Floats({2, 1, 1, 2}, {1, 3, 5, 7})},
               {"scale", Floats({1}, {1}), true},
               {"bias", Floats({1}, {0}), true},
               {"mean", Floats({1}, {0}), true},
               {"var", Floats({1}, {1}), true}},
              Attrs({{"epsilon", 0.0f}, {"training_mode", int64_t{1}}}), 3));
  ExpectFloatsNear(y[0], {2, 1, 1, 2}, {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f});
  ExpectFloatsNear(y[1], {1}, {0.4f});  // 0 * 0.9 + 4 * 0.1
  ExpectFloatsNear(y[2], {1}, {1.4f});  // 1 * 0.9 + 5 * 0.1
}

TEST(BatchNormTest, WrongChannelCountIsInvalidArgument) {
  absl::StatusOr<std::vector<Tensor>> y = RunNode("BatchNormalization", BatchNormInputs(Floats({1, 3}, {1, 2, 3})));
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
  EXPECT_NE(y.status().message().find("scale"), absl::string_view::npos) << y.status();
}

TEST(InstanceNormTest, PerInstanceStatistics) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, RunNode("InstanceNormalization",
                                                            {{"x", Floats({1, 2, 3}, {1, 2, 3, 2, 2, 2})},
                                                             {"scale", Floats({2}, {1, 3}), true},
                                                             {"bias", Floats({2}, {0, 1}), true}}));
  // Channel 0: (x - 2) / sqrt(2/3 + 1e-5); channel 1 is constant, so only the bias remains.
  ExpectFloatsNear(y[0], {1, 2, 3}, {-1.2247357f, 0.0f, 1.2247357f, 1.0f, 1.0f, 1.0f});
}

TEST(LayerNormTest, LastAxisWithMeanAndInvStdDev) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, RunNode("LayerNormalization",
                                                            {{"x", Floats({2, 3}, {1, 2, 3, 2, 4, 6})},
                                                             {"scale", Floats({3}, {1, 2, 0.5f}), true},
                                                             {"bias", Floats({3}, {0, 0, 1}), true}},
                                                            Attrs({{"epsilon", 0.0f}}), 3));
  ExpectFloatsNear(y[0], {2, 3}, {-1.2247449f, 0.0f, 1.6123724f, -1.2247449f, 0.0f, 1.6123724f});
  ExpectFloatsNear(y[1], {2, 1}, {2.0f, 4.0f});
  ExpectFloatsNear(y[2], {2, 1}, {1.2247449f, 0.6123724f});
}

TEST(LayerNormTest, AxisZeroWithBroadcastScaleAndNoBias) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y,
                             RunNode("LayerNormalization",
                                     {{"x", Floats({2, 2}, {1, 3, 5, 7})}, {"scale", Floats({1}, {2}), true}},
                                     Attrs({{"axis", int64_t{0}}, {"epsilon", 0.0f}})));
  ExpectFloatsNear(y[0], {2, 2}, {-2.6832816f, -0.8944272f, 0.8944272f, 2.6832816f});
}

TEST(LayerNormTest, ScaleNotBroadcastableIsInvalidArgument) {
  absl::StatusOr<std::vector<Tensor>> y = RunNode(
      "LayerNormalization", {{"x", Floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"scale", Floats({2}, {1, 1}), true}});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
}

// size 3 (one channel each side) and alpha / size = 1, beta = 1, bias = 1: y = x / (1 + sum x^2).
TEST(LrnTest, CrossChannelWindow) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y,
      RunNode("LRN", {{"x", Floats({1, 3, 1, 1}, {1, 2, 3})}},
              Attrs({{"size", int64_t{3}}, {"alpha", 3.0f}, {"beta", 1.0f}, {"bias", 1.0f}})));
  ExpectFloatsNear(y[0], {1, 3, 1, 1}, {1.0f / 6, 2.0f / 15, 3.0f / 14});
}

// Even size: the window reaches (size-1)/2 = 0 channels back and 1 forward.
TEST(LrnTest, EvenSizeWindowLeansForward) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y,
      RunNode("LRN", {{"x", Floats({1, 3, 1}, {1, 2, 3})}},
              Attrs({{"size", int64_t{2}}, {"alpha", 2.0f}, {"beta", 1.0f}, {"bias", 1.0f}})));
  ExpectFloatsNear(y[0], {1, 3, 1}, {1.0f / 6, 2.0f / 14, 3.0f / 10});
}

}  // namespace
}  // namespace qfuse::runtime::nn_test
