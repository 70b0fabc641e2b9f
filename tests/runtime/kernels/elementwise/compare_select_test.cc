// Equal/Less/Greater with broadcasting, and Where with three-way broadcasting, on hand-computed
// cases: the int64 shape pattern torch writes for expand(n, -1, -1), and a float select.
#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

// A BOOL tensor (std::vector<bool> has no contiguous storage to view).
ir::Tensor Bools(std::vector<int64_t> dims, std::initializer_list<bool> values) {
  ir::Tensor t(ir::DataType::kBool, std::move(dims));
  bool* d = t.data<bool>();
  for (bool v : values) *d++ = v;
  return t;
}

std::vector<bool> BoolValues(const ir::Tensor& t) {
  const bool* d = t.data<bool>();
  return std::vector<bool>(d, d + t.num_elements());
}

TEST(CompareTest, BroadcastToBool) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto eq, RunOneNode("Equal", {In(T1<int64_t>({3}, {4, -1, -1})), In(T1<int64_t>({1}, {-1}))}));
  ASSERT_EQ(eq[0].dtype(), ir::DataType::kBool);
  EXPECT_EQ(BoolValues(eq[0]), (std::vector<bool>{false, true, true}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto lt, RunOneNode("Less", {In(T1<float>({2, 2}, {1.f, 2.f, 3.f, 4.f})),
                                                         In(T1<float>({2, 1}, {2.f, 3.5f}))}));
  EXPECT_EQ(BoolValues(lt[0]), (std::vector<bool>{true, false, true, false}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto gt, RunOneNode("Greater", {In(T1<float>({2}, {1.f, 5.f})), In(T1<float>({}, {2.f}))}));
  EXPECT_EQ(BoolValues(gt[0]), (std::vector<bool>{false, true}));
  EXPECT_FALSE(RunOneNode("Equal", {In(T1<float>({1}, {1.f})), In(T1<int64_t>({1}, {1}))}).ok());
}

TEST(WhereTest, ThreeWayBroadcast) {
  // torch: expand(n, -1, -1) -> Where(Equal(shape, -1), ones, shape)
  QFUSE_ASSERT_OK_AND_ASSIGN(auto s, RunOneNode("Where", {In(Bools({3}, {false, true, true})),
                                                          In(T1<int64_t>({3}, {1, 1, 1})),
                                                          In(T1<int64_t>({3}, {4, -1, -1}))}));
  EXPECT_EQ(Values<int64_t>(s[0]), (std::vector<int64_t>{4, 1, 1}));
  // cond [2,1], x [1,3], y scalar -> [2,3]
  QFUSE_ASSERT_OK_AND_ASSIGN(auto f, RunOneNode("Where", {In(Bools({2, 1}, {true, false})),
                                                          In(T1<float>({1, 3}, {1.f, 2.f, 3.f})),
                                                          In(T1<float>({}, {-1.f}))}));
  EXPECT_EQ(f[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<float>(f[0]), (std::vector<float>{1.f, 2.f, 3.f, -1.f, -1.f, -1.f}));
  EXPECT_FALSE(RunOneNode("Where", {In(T1<float>({1}, {1.f})), In(T1<float>({1}, {1.f})), In(T1<float>({1}, {1.f}))}).ok());
}

}  // namespace
}  // namespace qfuse::testing
