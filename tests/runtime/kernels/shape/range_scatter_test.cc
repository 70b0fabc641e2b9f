// Range and ScatterND beyond ONNX's node tests (which the conformance suite runs): Range's
// count and accumulated values by hand, a zero delta; ScatterND with negative indices, the max
// and min reductions, and indices out of range, refused before anything is written.
#include <limits>

#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::Tensor;

Tensor Scalar64(int64_t v) { return T1<int64_t>({}, {v}); }

TEST(RangeTest, CountsAndValuesByHand) {
  // ceil((10 - 1) / 4) = 3 values; ceil((4 - 10) / -2) = 3; an empty range.
  QFUSE_ASSERT_OK_AND_ASSIGN(auto up, RunOneNode("Range", {In(Scalar64(1)), In(Scalar64(10)), In(Scalar64(4))}));
  EXPECT_EQ(Values<int64_t>(up[0]), (std::vector<int64_t>{1, 5, 9}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto down, RunOneNode("Range", {In(Scalar64(10)), In(Scalar64(4)), In(Scalar64(-2))}));
  EXPECT_EQ(Values<int64_t>(down[0]), (std::vector<int64_t>{10, 8, 6}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto none, RunOneNode("Range", {In(Scalar64(5)), In(Scalar64(5)), In(Scalar64(1))}));
  EXPECT_EQ(none[0].dims(), (std::vector<int64_t>{0}));
  // Floats accumulate, as onnxruntime does (its output for these inputs is the same): the 8th
  // value is 0.1f added seven times, 0.70000005f, where 7 * 0.1f rounds to 0.7f.
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto f, RunOneNode("Range", {In(T1<float>({}, {0.f})), In(T1<float>({}, {0.95f})), In(T1<float>({}, {0.1f}))}));
  float acc = 0.f;
  std::vector<float> want;
  for (int i = 0; i < 10; ++i, acc += 0.1f) want.push_back(acc);
  ASSERT_NE(want[7], 7 * 0.1f);
  EXPECT_EQ(Values<float>(f[0]), want);
  auto zero = RunOneNode("Range", {In(Scalar64(0)), In(Scalar64(3)), In(Scalar64(0))});
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument) << zero.status();
}

// Counts at the edges: a float difference taken in float, as onnxruntime takes it (1 - -1e-9f
// rounds to 1: one value, where double arithmetic would give two); int64 endpoints near the
// type's max, whose exact count is 1 (both round to 2^63 in double); an int32 range whose next
// step would overflow (never computed past the last value).
TEST(RangeTest, CountsAtTheEdges) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto f, RunOneNode("Range", {In(T1<float>({}, {-1e-9f})), In(T1<float>({}, {1.f})), In(T1<float>({}, {1.f}))}));
  EXPECT_EQ(Values<float>(f[0]), (std::vector<float>{-1e-9f}));
  const int64_t max64 = std::numeric_limits<int64_t>::max();
  QFUSE_ASSERT_OK_AND_ASSIGN(auto big,
                             RunOneNode("Range", {In(Scalar64(max64 - 5)), In(Scalar64(max64)), In(Scalar64(10))}));
  EXPECT_EQ(Values<int64_t>(big[0]), (std::vector<int64_t>{max64 - 5}));
  const int32_t max32 = std::numeric_limits<int32_t>::max();
  QFUSE_ASSERT_OK_AND_ASSIGN(auto i32, RunOneNode("Range", {In(T1<int32_t>({}, {0})), In(T1<int32_t>({}, {max32})),
                                                            In(T1<int32_t>({}, {1 << 30}))}));
  EXPECT_EQ(Values<int32_t>(i32[0]), (std::vector<int32_t>{0, 1 << 30}));
}

TEST(ScatterNdTest, NegativeIndicesAndReductions) {
  // data [3, 2]; rows -1 (= 2) and 0 updated.
  const Tensor data = T1<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor indices = T1<int64_t>({2, 1}, {-1, 0});
  const Tensor updates = T1<float>({2, 2}, {10, 0, 0, 10});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto set, RunOneNode("ScatterND", {In(data), In(indices), In(updates)}));
  EXPECT_EQ(Values<float>(set[0]), (std::vector<float>{0, 10, 3, 4, 10, 0}));
  ir::AttributeMap max;
  max.Set("reduction", std::string("max"));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto mx, RunOneNode("ScatterND", {In(data), In(indices), In(updates)}, max));
  EXPECT_EQ(Values<float>(mx[0]), (std::vector<float>{1, 10, 3, 4, 10, 6}));
  ir::AttributeMap min;
  min.Set("reduction", std::string("min"));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto mn, RunOneNode("ScatterND", {In(data), In(indices), In(updates)}, min));
  EXPECT_EQ(Values<float>(mn[0]), (std::vector<float>{0, 2, 3, 4, 5, 0}));
  // Element indices (k = rank): one value each.
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto one, RunOneNode("ScatterND", {In(data), In(T1<int64_t>({1, 2}, {1, -1})), In(T1<float>({1}, {7}))}));
  EXPECT_EQ(Values<float>(one[0]), (std::vector<float>{1, 2, 3, 7, 5, 6}));
}

TEST(ScatterNdTest, BadIndicesAreErrors) {
  const Tensor data = T1<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto out_of_range = RunOneNode("ScatterND", {In(data), In(T1<int64_t>({1, 1}, {3})), In(T1<float>({1, 2}, {0, 0}))});
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument) << out_of_range.status();
  EXPECT_NE(out_of_range.status().message().find("out of range"), std::string::npos) << out_of_range.status();
  auto wrong_updates =
      RunOneNode("ScatterND", {In(data), In(T1<int64_t>({1, 1}, {0})), In(T1<float>({1, 3}, {0, 0, 0}))});
  EXPECT_EQ(wrong_updates.status().code(), absl::StatusCode::kInvalidArgument) << wrong_updates.status();
  auto too_long = RunOneNode("ScatterND", {In(data), In(T1<int64_t>({1, 3}, {0, 0, 0})), In(T1<float>({1}, {0}))});
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument) << too_long.status();
}

}  // namespace
}  // namespace qfuse::testing
