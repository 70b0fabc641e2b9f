// Unary kernels: attribute defaults, numerically hard inputs, Clip on integers,
// Dropout outputs and unsupported dtypes.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::DataType;
using ir::Tensor;

TEST(UnaryTest, SigmoidSaturatesWithoutNaN) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Sigmoid", {In(T1<float>({3}, {-1000, 0, 1000}))}));
  EXPECT_EQ(Values<float>(y[0]), (std::vector<float>{0, 0.5f, 1}));
}

TEST(UnaryTest, LeakyReluHardSigmoidHardSwishDefaults) {
  Tensor x = T1<float>({4}, {-10, -1, 1, 10});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto leaky, RunOneNode("LeakyRelu", {In(x)}));
  EXPECT_EQ(Values<float>(leaky[0]), (std::vector<float>{0.01f * -10, 0.01f * -1, 1, 10}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto hs, RunOneNode("HardSigmoid", {In(x)}));  // max(0, min(1, 0.2x + 0.5))
  EXPECT_EQ(Values<float>(hs[0]), (std::vector<float>{0, 0.2f * -1 + 0.5f, 0.2f + 0.5f, 1}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto hw, RunOneNode("HardSwish", {In(T1<float>({4}, {-4, -1, 1, 4}))}));
  // x * max(0, min(1, x/6 + 0.5)): -1 * 1/3, 1 * 2/3.
  const auto v = Values<float>(hw[0]);
  EXPECT_EQ(v[0], 0);
  EXPECT_NEAR(v[1], -1.f / 3, 1e-6);
  EXPECT_NEAR(v[2], 2.f / 3, 1e-6);
  EXPECT_EQ(v[3], 4);
}

TEST(UnaryTest, ClipInt8WithOnlyAMaxBound) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto y, RunOneNode("Clip", {In(T1<int8_t>({4}, {-128, -5, 5, 127})), Omitted(), Const(Tensor::Scalar<int8_t>(3))}));
  EXPECT_EQ(y[0].dtype(), DataType::kInt8);
  EXPECT_EQ(Values<int8_t>(y[0]), (std::vector<int8_t>{-128, -5, 3, 3}));
  // Mismatched bound type is an error, not a reinterpretation.
  auto bad = RunOneNode("Clip", {In(T1<int8_t>({1}, {0})), Const(Tensor::Scalar<float>(0))});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UnaryTest, DropoutInferenceAndZeroRatioTraining) {
  Tensor x = T1<float>({2, 2}, {1, -2, 3, -4});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto inf, RunOneNode("Dropout", {In(x), Const(Tensor::Scalar<float>(0.7f))}, {}, 2));
  EXPECT_EQ(Values<float>(inf[0]), Values<float>(x));
  ASSERT_EQ(inf[1].dtype(), DataType::kBool);
  EXPECT_EQ(Values<bool>(inf[1]), (std::vector<bool>{true, true, true, true}));
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto train, RunOneNode("Dropout", {In(x), Const(Tensor::Scalar<float>(0.f)), Const(Tensor::Scalar<bool>(true))}, {}, 2));
  EXPECT_EQ(Values<float>(train[0]), Values<float>(x));
  // Training with ratio 0.5: every element is either dropped or doubled.
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto half, RunOneNode("Dropout", {In(x), Const(Tensor::Scalar<float>(0.5f)), Const(Tensor::Scalar<bool>(true))}, {}, 2));
  const auto y = Values<float>(half[0]);
  const auto mask = Values<bool>(half[1]);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], mask[i] ? 2 * x.data<float>()[i] : 0.f) << i;
}

TEST(UnaryTest, MathOnIntegersIsUnimplemented) {
  auto r = RunOneNode("Sqrt", {In(T1<int32_t>({1}, {4}))});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(UnaryTest, DoubleIsSupported) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Exp", {In(T1<double>({2}, {0, 1}))}));
  EXPECT_EQ(y[0].dtype(), DataType::kFloat64);
  EXPECT_DOUBLE_EQ(Values<double>(y[0])[1], std::exp(1.0));
}

}  // namespace
}  // namespace qfuse::testing
