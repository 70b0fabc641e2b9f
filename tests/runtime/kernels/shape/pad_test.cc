// Pad: reflect beyond one period, edge, negative (cropping) pads and errors.
#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::Tensor;

ir::AttributeMap Mode(const std::string& m) {
  ir::AttributeMap a;
  a.Set("mode", m);
  return a;
}

TEST(PadTest, ReflectWiderThanTheInput) {
  // numpy.pad([1,2,3], (5,4), 'reflect'): the output repeats [1,2,3,2] with period 4
  // (2*(n-1)); left indices -5..-1 map to 1,0,1,2,1 and right indices 3..6 to 1,0,1,2.
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Pad", {In(T1<float>({3}, {1, 2, 3})), Const(T1<int64_t>({2}, {5, 4}))},
                                                Mode("reflect")));
  EXPECT_EQ(Values<float>(y[0]), (std::vector<float>{2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3}));
}

TEST(PadTest, EdgeOn2DAndConstantValue) {
  Tensor x = T1<int32_t>({2, 2}, {1, 2, 3, 4});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto e, RunOneNode("Pad", {In(x), Const(T1<int64_t>({4}, {1, 0, 0, 1}))}, Mode("edge")));
  EXPECT_EQ(e[0].dims(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(Values<int32_t>(e[0]), (std::vector<int32_t>{1, 2, 2, 1, 2, 2, 3, 4, 4}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto c, RunOneNode("Pad", {In(x), Const(T1<int64_t>({4}, {0, 1, 1, 0})),
                                                        Const(Tensor::Scalar<int32_t>(-9))}));
  EXPECT_EQ(Values<int32_t>(c[0]), (std::vector<int32_t>{-9, 1, 2, -9, 3, 4, -9, -9, -9}));
}

TEST(PadTest, NegativePadsCrop) {
  Tensor x = T1<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Pad", {In(x), Const(T1<int64_t>({4}, {-1, 1, 0, -1}))}));
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Values<float>(y[0]), (std::vector<float>{0, 4, 5}));
  auto too_much = RunOneNode("Pad", {In(x), Const(T1<int64_t>({4}, {-2, 0, -1, 0}))});
  EXPECT_EQ(too_much.status().code(), absl::StatusCode::kInvalidArgument);
  auto wrong_len = RunOneNode("Pad", {In(x), Const(T1<int64_t>({2}, {1, 1}))});
  EXPECT_EQ(wrong_len.status().code(), absl::StatusCode::kInvalidArgument);
  auto bad_mode = RunOneNode("Pad", {In(x), Const(T1<int64_t>({4}, {0, 0, 0, 0}))}, Mode("mirror"));
  EXPECT_EQ(bad_mode.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace qfuse::testing
