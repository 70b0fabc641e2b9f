// Reshape-like kernels: dynamic batch through 0 / -1, error statuses, Shape slicing,
// ConstantOfShape and Expand.
#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::DataType;
using ir::Tensor;

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(ReshapeTest, ZeroAndMinusOneFollowTheBatch) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto node, OneNode::Create("Reshape", {In(T1<float>({2, 3, 4}, Iota(24))),
                                                                    Const(T1<int64_t>({2}, {0, -1}))}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto a, node->Run());
  EXPECT_EQ(a[0].dims(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(Values<float>(a[0]), Iota(24));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto b, node->Run({{"in0", T1<float>({5, 3, 4}, Iota(60))}}));
  EXPECT_EQ(b[0].dims(), (std::vector<int64_t>{5, 12}));
}

// Shapes whose element count overflows int64 (4 * (2^62 + 196) wraps to 784, the size of a
// 28x28 image) are refused with a one-line error instead of relabelling the data.
TEST(ReshapeTest, OverflowingShapesAreRefused) {
  const int64_t huge = (int64_t{1} << 62) + 196;
  auto reshape = RunOneNode("Reshape", {In(T1<float>({1, 1, 28, 28}, Iota(784))), Const(T1<int64_t>({2}, {huge, 4}))});
  EXPECT_EQ(reshape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reshape.status().message().find("overflows int64"), std::string::npos) << reshape.status();
  auto fill = RunOneNode("ConstantOfShape", {In(T1<int64_t>({2}, {huge, 4}))});
  EXPECT_FALSE(fill.ok());
  EXPECT_NE(fill.status().message().find("overflows int64"), std::string::npos) << fill.status();
  auto expand = RunOneNode("Expand", {In(T1<float>({1, 784}, Iota(784))),
                                      Const(T1<int64_t>({2}, {(int64_t{1} << 62) + 1, 784}))});
  EXPECT_FALSE(expand.ok());
  auto big = RunOneNode("ConstantOfShape", {In(T1<int64_t>({2}, {int64_t{1} << 30, int64_t{1} << 20}))});
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
}

TEST(ReshapeTest, BadShapesAreErrors) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{5, -1}, {-1, -1}, {7}, {2, -3}}) {
    auto r = RunOneNode("Reshape", {In(T1<float>({2, 3}, Iota(6))), Const(T1<int64_t>({static_cast<int64_t>(shape.size())}, shape))});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << ir::DimsToString(shape);
  }
  // allowzero=1 keeps a literal 0 dim (only valid for an empty input).
  ir::AttributeMap a;
  a.Set("allowzero", int64_t{1});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto z, RunOneNode("Reshape", {In(Tensor(DataType::kFloat32, {0, 3})),
                                                            Const(T1<int64_t>({2}, {3, 0}))}, a));
  EXPECT_EQ(z[0].dims(), (std::vector<int64_t>{3, 0}));
}

TEST(SqueezeTest, AxesAndErrors) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto all, RunOneNode("Squeeze", {In(T1<float>({1, 2, 1}, {1, 2}))}));
  EXPECT_EQ(all[0].dims(), (std::vector<int64_t>{2}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto one, RunOneNode("Squeeze", {In(T1<float>({1, 2, 1}, {1, 2})), Const(T1<int64_t>({1}, {-1}))}));
  EXPECT_EQ(one[0].dims(), (std::vector<int64_t>{1, 2}));
  auto bad = RunOneNode("Squeeze", {In(T1<float>({1, 2, 1}, {1, 2})), Const(T1<int64_t>({1}, {1}))});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto dup = RunOneNode("Unsqueeze", {In(T1<float>({2}, {1, 2})), Const(T1<int64_t>({2}, {0, -3}))});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kInvalidArgument);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto un, RunOneNode("Unsqueeze", {In(T1<float>({2}, {1, 2})), Const(T1<int64_t>({2}, {-1, 0}))}));
  EXPECT_EQ(un[0].dims(), (std::vector<int64_t>{1, 2, 1}));
}

TEST(FlattenTest, AxisZeroAndRank) {
  ir::AttributeMap a;
  a.Set("axis", int64_t{0});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Flatten", {In(T1<float>({2, 3}, Iota(6)))}, a));
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{1, 6}));
  a.Set("axis", int64_t{3});
  EXPECT_EQ(RunOneNode("Flatten", {In(T1<float>({2, 3}, Iota(6)))}, a).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShapeTest, StartEndClampAndDynamicBatch) {
  ir::AttributeMap a;
  a.Set("start", int64_t{-2});
  a.Set("end", int64_t{100});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto node, OneNode::Create("Shape", {In(Tensor(DataType::kInt8, {2, 3, 4}))}, a));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, node->Run());
  EXPECT_EQ(Values<int64_t>(y[0]), (std::vector<int64_t>{3, 4}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto full, RunOneNode("Shape", {In(Tensor(DataType::kFloat32, {7, 1}))}));
  EXPECT_EQ(Values<int64_t>(full[0]), (std::vector<int64_t>{7, 1}));
}

TEST(ConstantOfShapeTest, TypedValueAndDefault) {
  ir::AttributeMap a;
  a.Set("value", Tensor::FromVector<int64_t>({1}, std::vector<int64_t>{-7}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("ConstantOfShape", {In(T1<int64_t>({2}, {2, 2}))}, a));
  EXPECT_EQ(y[0].dtype(), DataType::kInt64);
  EXPECT_EQ(Values<int64_t>(y[0]), (std::vector<int64_t>{-7, -7, -7, -7}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto d, RunOneNode("ConstantOfShape", {In(T1<int64_t>({1}, {3}))}));
  EXPECT_EQ(d[0].dtype(), DataType::kFloat32);
  EXPECT_EQ(Values<float>(d[0]), (std::vector<float>{0, 0, 0}));
  auto neg = RunOneNode("ConstantOfShape", {In(T1<int64_t>({1}, {-3}))});
  EXPECT_EQ(neg.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ExpandTest, BroadcastsBothWays) {
  // [3,1] expanded with shape [2,1,2] -> [2,3,2].
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Expand", {In(T1<int32_t>({3, 1}, {1, 2, 3})),
                                                           Const(T1<int64_t>({3}, {2, 1, 2}))}));
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(Values<int32_t>(y[0]), (std::vector<int32_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  auto bad = RunOneNode("Expand", {In(T1<int32_t>({3}, {1, 2, 3})), Const(T1<int64_t>({1}, {2}))});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace qfuse::testing
