// BatchNormalization, InstanceNormalization, LayerNormalization and LRN against
// hand-computed values.
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
