// Softmax / LogSoftmax against hand-computed values: strided (inner axis) and contiguous
// layouts, and inputs large enough to overflow exp without max subtraction.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/kernels/nn/nn.h"
#include "tests/runtime/kernels/nn/nn_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::nn_test {
namespace {

// softmax([0, 1, 2]).
constexpr float kP0 = 0.09003057f, kP1 = 0.24472847f, kP2 = 0.66524096f;

TEST(SoftmaxTest, MiddleAxisIsStrided) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y,
      RunNode("Softmax", {{"x", Floats({1, 3, 2}, {0, 1, 1, 1, 2, 1})}}, Attrs({{"axis", int64_t{1}}})));
  ExpectFloatsNear(y[0], {1, 3, 2}, {kP0, 1.0f / 3, kP1, 1.0f / 3, kP2, 1.0f / 3});
}

TEST(SoftmaxTest, DefaultLastAxisWithLargeInputs) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y,
                             RunNode("Softmax", {{"x", Floats({2, 3}, {1000, 1001, 1002, -3, -2, -1})}}));
  ExpectFloatsNear(y[0], {2, 3}, {kP0, kP1, kP2, kP0, kP1, kP2});
}

// LogSoftmax shares the Softmax kernel but is not in the default registry yet, so this
// drives CreateSoftmaxKernel directly.
absl::StatusOr<Tensor> RunLogSoftmax(Tensor x, int64_t axis) {
  ir::Graph graph;
  ir::AttributeMap attrs;
  attrs.Set("axis", axis);
  QFUSE_RETURN_IF_ERROR(BuildOneNode(&graph, "LogSoftmax", {{"x", x}}, attrs, 1));
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, kernels::CreateSoftmaxKernel(*graph.nodes()[0]));
  ThreadPool pool(1);
  KernelContext ctx{&pool};
  const Tensor* inputs[] = {&x};
  std::vector<Tensor> outputs(1);
  QFUSE_RETURN_IF_ERROR(kernel->Run(ctx, inputs, absl::MakeSpan(outputs)));
  return std::move(outputs[0]);
}

TEST(SoftmaxTest, LogSoftmaxBothLayouts) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor last, RunLogSoftmax(Floats({1, 3}, {1000, 1001, 1002}), -1));
  ExpectFloatsNear(last, {1, 3}, {-2.40760596f, -1.40760596f, -0.40760596f});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor first, RunLogSoftmax(Floats({3, 2}, {0, 5, 1, 5, 2, 5}), 0));
  ExpectFloatsNear(first, {3, 2}, {-2.40760596f, -1.09861229f, -1.40760596f, -1.09861229f, -0.40760596f, -1.09861229f});
}

TEST(SoftmaxTest, AxisOutOfRangeIsInvalidArgument) {
  absl::StatusOr<std::vector<Tensor>> y =
      RunNode("Softmax", {{"x", Floats({1, 3}, {1, 2, 3})}}, Attrs({{"axis", int64_t{2}}}));
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
}

}  // namespace
}  // namespace qfuse::runtime::nn_test
