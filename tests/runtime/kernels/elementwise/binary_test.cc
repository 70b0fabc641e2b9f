// Binary and variadic elementwise kernels: broadcasting corners, integer semantics,
// dynamic shapes and error statuses (the ONNX node tests cover the plain cases).
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::DataType;
using ir::Tensor;

TEST(BinaryTest, AddBroadcastsBothOperands) {
  // [2,1,3] + [4,1] -> [2,4,3]: out[i,j,k] = a[i,0,k] + b[j,0].
  Tensor a = T1<float>({2, 1, 3}, {0, 1, 2, 10, 20, 30});
  Tensor b = T1<float>({4, 1}, {100, 200, 300, 400});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto out, RunOneNode("Add", {In(a), In(b)}));
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(Values<float>(out[0]),
            (std::vector<float>{100, 101, 102, 200, 201, 202, 300, 301, 302, 400, 401, 402,
                                110, 120, 130, 210, 220, 230, 310, 320, 330, 410, 420, 430}));
}

TEST(BinaryTest, ScalarOnTheLeftAndPerChannel) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto sub, RunOneNode("Sub", {In(Tensor::Scalar<float>(10)), In(T1<float>({3}, {1, 2, 3}))}));
  EXPECT_EQ(sub[0].dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(Values<float>(sub[0]), (std::vector<float>{9, 8, 7}));
  // NCHW x per-channel [C,1,1].
  Tensor x = T1<float>({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto mul, RunOneNode("Mul", {In(x), Const(T1<float>({2, 1, 1}, {2, -1}))}));
  EXPECT_EQ(Values<float>(mul[0]), (std::vector<float>{2, 4, 6, 8, -5, -6, -7, -8}));
}

TEST(BinaryTest, DynamicBatchReusesTheKernel) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto node,
                             OneNode::Create("Add", {In(T1<float>({1, 2}, {1, 2})), Const(T1<float>({2}, {10, 20}))}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto one, node->Run());
  EXPECT_EQ(Values<float>(one[0]), (std::vector<float>{11, 22}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto three, node->Run({{"in0", T1<float>({3, 2}, {1, 2, 3, 4, 5, 6})}}));
  EXPECT_EQ(three[0].dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values<float>(three[0]), (std::vector<float>{11, 22, 13, 24, 15, 26}));
}

TEST(BinaryTest, IncompatibleShapesAndTypesAreErrors) {
  auto bad_shape = RunOneNode("Add", {In(T1<float>({2, 3}, {0, 0, 0, 0, 0, 0})), In(T1<float>({2}, {0, 0}))});
  ASSERT_FALSE(bad_shape.ok());
  EXPECT_EQ(bad_shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_shape.status().message().find("do not broadcast"), std::string::npos) << bad_shape.status();
  auto bad_type = RunOneNode("Mul", {In(T1<float>({1}, {1})), In(T1<int32_t>({1}, {1}))});
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BinaryTest, IntegerArithmeticWrapsAndDivisionNeverTraps) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto add, RunOneNode("Add", {In(T1<uint8_t>({2}, {250, 3})), In(T1<uint8_t>({2}, {10, 4}))}));
  EXPECT_EQ(Values<uint8_t>(add[0]), (std::vector<uint8_t>{4, 7}));
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto div, RunOneNode("Div", {In(T1<int32_t>({4}, {7, -7, 5, kMin})), In(T1<int32_t>({4}, {2, 2, 0, -1}))}));
  // Truncation toward zero; x / 0 -> 0; INT_MIN / -1 wraps to INT_MIN.
  EXPECT_EQ(Values<int32_t>(div[0]), (std::vector<int32_t>{3, -3, 0, kMin}));
}

TEST(BinaryTest, PowMixedTypesFollowTheBase) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto p, RunOneNode("Pow", {In(T1<int64_t>({3}, {2, 3, -2})), In(T1<float>({3}, {3, 0.5f, 2}))}));
  EXPECT_EQ(p[0].dtype(), DataType::kInt64);
  EXPECT_EQ(Values<int64_t>(p[0]), (std::vector<int64_t>{8, 1, 4}));  // 3^0.5 = 1.73 truncates to 1
  QFUSE_ASSERT_OK_AND_ASSIGN(auto q, RunOneNode("Pow", {In(T1<float>({2}, {2, 4})), In(Tensor::Scalar<int32_t>(-1))}));
  EXPECT_EQ(Values<float>(q[0]), (std::vector<float>{0.5f, 0.25f}));
}

// A one-value exponent of 2 or 3 is x * x or x * x * x, bit for bit, as onnxruntime computes
// it (float and double bases, float and int64 exponents, scalar and [1] shapes); other
// exponents stay std::pow.
TEST(BinaryTest, PowBySquaringAndCubingAsOnnxRuntime) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 500.f) * 1.37e-3f + 1.f / (1 + i % 7);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto sq, RunOneNode("Pow", {In(T1<float>({1000}, x)), In(Tensor::Scalar<float>(2))}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto cu, RunOneNode("Pow", {In(T1<float>({1000}, x)), In(T1<int64_t>({1}, {3}))}));
  std::vector<float> positive(x.size());
  for (size_t i = 0; i < x.size(); ++i) positive[i] = std::fabs(x[i]);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto other,
                             RunOneNode("Pow", {In(T1<float>({1000}, positive)), In(Tensor::Scalar<float>(2.5f))}));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(Values<float>(sq[0])[i], x[i] * x[i]) << i;
    EXPECT_EQ(Values<float>(cu[0])[i], x[i] * x[i] * x[i]) << i;
    EXPECT_EQ(Values<float>(other[0])[i], std::pow(positive[i], 2.5f)) << i;
  }
  QFUSE_ASSERT_OK_AND_ASSIGN(auto d, RunOneNode("Pow", {In(T1<double>({2}, {1.5, -3})), In(Tensor::Scalar<double>(3))}));
  EXPECT_EQ(Values<double>(d[0]), (std::vector<double>{3.375, -27}));
  // A one-value base is std::pow, as in onnxruntime (its one-value-base branch comes first):
  // 1.00014102f cubed as products is 1.00042307, std::pow gives 1.00042319.
  const float base = 1.00014102f;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto one, RunOneNode("Pow", {In(T1<float>({1}, {base})), In(T1<int64_t>({1}, {3}))}));
  EXPECT_EQ(Values<float>(one[0])[0], static_cast<float>(std::pow(static_cast<double>(base), 3.0)));
  EXPECT_NE(Values<float>(one[0])[0], base * base * base);
}

TEST(BinaryTest, PReluSlopeBroadcastsOntoX) {
  Tensor x = T1<float>({1, 2, 1, 2}, {-1, 2, -3, 4});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("PRelu", {In(x), Const(T1<float>({2, 1, 1}, {0.5f, 0.25f}))}));
  EXPECT_EQ(Values<float>(y[0]), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
  // A slope bigger than x would change the output shape: refused.
  auto bad = RunOneNode("PRelu", {In(T1<float>({2}, {1, 2})), In(T1<float>({3, 2}, {1, 1, 1, 1, 1, 1}))});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(VariadicTest, SumMaxMinBroadcastAcrossThreeInputs) {
  Tensor a = T1<float>({2, 1}, {1, 2});
  Tensor b = T1<float>({3}, {10, 20, 30});
  Tensor c = Tensor::Scalar<float>(100);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto sum, RunOneNode("Sum", {In(a), In(b), In(c)}));
  ASSERT_EQ(sum[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<float>(sum[0]), (std::vector<float>{111, 121, 131, 112, 122, 132}));
  // The first pair broadcasts to less than the final shape: [1] and [] then [2,2].
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto mx, RunOneNode("Max", {In(T1<int16_t>({1}, {5})), In(Tensor::Scalar<int16_t>(-3)),
                                  In(T1<int16_t>({2, 2}, {1, 9, -4, 5}))}));
  EXPECT_EQ(Values<int16_t>(mx[0]), (std::vector<int16_t>{5, 9, 5, 5}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto mn, RunOneNode("Min", {In(T1<uint64_t>({2}, {7, 1}))}));
  EXPECT_EQ(Values<uint64_t>(mn[0]), (std::vector<uint64_t>{7, 1}));
}

TEST(VariadicTest, Float16MaxComparesValuesNotBits) {
  // 0xbc00 = -1.0, 0x3c00 = 1.0, 0x0001 = smallest subnormal, 0x8000 = -0.0.
  Tensor a(DataType::kFloat16, {3});
  Tensor b(DataType::kFloat16, {3});
  const uint16_t av[] = {0xbc00, 0x0001, 0x3c00};
  const uint16_t bv[] = {0x8000, 0x0000, 0xbc00};
  std::memcpy(a.raw_data(), av, sizeof(av));
  std::memcpy(b.raw_data(), bv, sizeof(bv));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Max", {In(a), In(b)}));
  ASSERT_EQ(y[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(Values<uint16_t>(y[0]), (std::vector<uint16_t>{0x8000, 0x0001, 0x3c00}));
}

}  // namespace
}  // namespace qfuse::testing
