// ReduceSum / ReduceMean / ReduceMax and ArgMax against hand-computed values: several
// axes with and without keepdims, non-adjacent axes, empty axes, integer inputs, errors.
#include <vector>

#include "gtest/gtest.h"
#include "tests/runtime/kernels/nn/nn_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::nn_test {
namespace {

using Ints = std::vector<int64_t>;

// [2,3,2] holding 0..11.
Tensor Ramp() {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i);
  return Floats({2, 3, 2}, v);
}

absl::StatusOr<std::vector<Tensor>> ReduceSum(const Ints& axes, int64_t keepdims) {
  return RunNode("ReduceSum", {{"x", Ramp()}, {"axes", Int64s({static_cast<int64_t>(axes.size())}, axes), true}},
                 Attrs({{"keepdims", keepdims}}));
}

TEST(ReduceSumTest, TrailingAxesKeepdimsBothWays) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> kept, ReduceSum({1, 2}, 1));
  ExpectFloatsNear(kept[0], {2, 1, 1}, {15, 51});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> dropped, ReduceSum({2, 1}, 0));
  ExpectFloatsNear(dropped[0], {2}, {15, 51});
}

// Float sums over trailing axes add in onnxruntime's order (nn_common.h OrtFloatSum), by hand:
// [2, 9]. Row 0 (offset 0): lanes x0 + x4 = 2^24 + 1, which rounds to 2^24, and x2 + x6 =
// -2^24 + 1; their sum is 1, plus x8 = 0: 1, where the exact sum is 2. Row 1 (offset 9, so
// packets start at its 4th element y3): (y3 + y5) + (y4 + y6) = (2^24 + 1 -> 2^24) - 2^24 = 0,
// then y0..y2 and y7, y8 (all 0): 0, where the exact sum is 1. A double sum gives 2 and 1;
// onnxruntime 1.30 gives 1 and 0 on this input (ReduceSum over axis -1, models/zoo/ort_compare.js).
TEST(ReduceSumTest, TrailingFloatSumsAddInOnnxruntimesOrder) {
  const float big = 16777216.f;                                     // 2^24
  const Tensor x = Floats({2, 9}, {big, 0, -big, 0, 1, 0, 1, 0, 0,  //
                                   0, 0, 0, big, 0, 1, -big, 0, 0});
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> sum,
      RunNode("ReduceSum", {{"x", x}, {"axes", Int64s({1}, {-1}), true}}, Attrs({{"keepdims", int64_t{0}}})));
  ASSERT_EQ(sum[0].dims(), (Ints{2}));
  EXPECT_EQ(sum[0].data<float>()[0], 1.f);
  EXPECT_EQ(sum[0].data<float>()[1], 0.f);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> mean,
                             RunNode("ReduceMean", {{"x", x}}, Attrs({{"axes", Ints{-1}}, {"keepdims", int64_t{0}}})));
  EXPECT_EQ(mean[0].data<float>()[0], 1.f / 9.f);
  EXPECT_EQ(mean[0].data<float>()[1], 0.f);
}

// Rows of 19 (two 8-float blocks, a 4-float step skipped, a tail of 3), the second row starting
// 3 floats past a 16-byte boundary: onnxruntime-node 1.30 (tools/ort) gives 2^24 for both rows'
// sums, where the exact sum is 2^24 + 1, one 4-lane packet gives 2^24 + 2 and a left-to-right
// float sum 2^24 + 4; the mean is that sum / 19 in float.
TEST(ReduceSumTest, LongTrailingFloatSumsAddInOnnxruntimesOrder) {
  const float big = 16777216.f;  // 2^24
  const std::vector<float> row = {-big, 0, 0, -1, -1, 0, big, 0, 2, 0, 0, 0, big, 1, 0, 0, 0, 0, 0};
  std::vector<float> rows = row;
  rows.insert(rows.end(), row.begin(), row.end());
  const Tensor x = Floats({2, 19}, rows);
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> sum,
      RunNode("ReduceSum", {{"x", x}, {"axes", Int64s({1}, {-1}), true}}, Attrs({{"keepdims", int64_t{0}}})));
  ASSERT_EQ(sum[0].dims(), (Ints{2}));
  EXPECT_EQ(sum[0].data<float>()[0], big);
  EXPECT_EQ(sum[0].data<float>()[1], big);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> mean,
                             RunNode("ReduceMean", {{"x", x}}, Attrs({{"axes", Ints{-1}}, {"keepdims", int64_t{0}}})));
  EXPECT_EQ(mean[0].data<float>()[0], big / 19.f);
  EXPECT_EQ(mean[0].data<float>()[1], big / 19.f);
}

TEST(ReduceSumTest, NonAdjacentAxesKeepdimsBothWays) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> kept, ReduceSum({0, -1}, 1));
  ExpectFloatsNear(kept[0], {1, 3, 1}, {14, 22, 30});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> dropped, ReduceSum({0, 2}, 0));
  ExpectFloatsNear(dropped[0], {3}, {14, 22, 30});
}

TEST(ReduceSumTest, MiddleAxis) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, ReduceSum({1}, 0));
  ExpectFloatsNear(y[0], {2, 2}, {6, 9, 24, 27});
}

TEST(ReduceSumTest, EmptyAxesReduceAllOrPassThrough) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> all, RunNode("ReduceSum", {{"x", Ramp()}}));
  ExpectFloatsNear(all[0], {1, 1, 1}, {66});
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> noop,
      RunNode("ReduceSum", {{"x", Ramp()}, {"axes", Int64s({0}, {}), true}}, Attrs({{"noop_with_empty_axes", int64_t{1}}})));
  ExpectFloatsNear(noop[0], {2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

TEST(ReduceSumTest, Int64KeepsType) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y,
      RunNode("ReduceSum", {{"x", Int64s({2, 2}, {1, 2, 3, 4})}, {"axes", Int64s({1}, {0}), true}},
              Attrs({{"keepdims", int64_t{0}}})));
  ASSERT_EQ(y[0].dtype(), DataType::kInt64);
  ASSERT_EQ(y[0].dims(), (Ints{2}));
  EXPECT_EQ(y[0].data<int64_t>()[0], 4);
  EXPECT_EQ(y[0].data<int64_t>()[1], 6);
}

TEST(ReduceMeanTest, AxesAttribute) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y,
                             RunNode("ReduceMean", {{"x", Ramp()}}, Attrs({{"axes", Ints{-1}}, {"keepdims", int64_t{0}}})));
  ExpectFloatsNear(y[0], {2, 3}, {0.5f, 2.5f, 4.5f, 6.5f, 8.5f, 10.5f});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> spread,
                             RunNode("ReduceMean", {{"x", Ramp()}}, Attrs({{"axes", Ints{0, 2}}})));
  ExpectFloatsNear(spread[0], {1, 3, 1}, {3.5f, 5.5f, 7.5f});
}

TEST(ReduceMaxTest, AxesAttributeAndDefault) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y,
                             RunNode("ReduceMax", {{"x", Ramp()}}, Attrs({{"axes", Ints{0, 2}}, {"keepdims", int64_t{0}}})));
  ExpectFloatsNear(y[0], {3}, {7, 9, 11});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> all, RunNode("ReduceMax", {{"x", Floats({2}, {-7, -3})}}));
  ExpectFloatsNear(all[0], {1}, {-3});
}

TEST(ReduceErrorTest, RepeatedOrOutOfRangeAxes) {
  absl::StatusOr<std::vector<Tensor>> repeated = ReduceSum({1, -2}, 1);
  ASSERT_FALSE(repeated.ok());
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument) << repeated.status();
  absl::StatusOr<std::vector<Tensor>> out_of_range = ReduceSum({3}, 1);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument) << out_of_range.status();
}

std::vector<int64_t> Values(const Tensor& t) {
  return std::vector<int64_t>(t.values<int64_t>().begin(), t.values<int64_t>().end());
}

TEST(ArgMaxTest, FirstOrLastOfTies) {
  const Tensor x = Floats({2, 3}, {1, 5, 5, 7, 2, 7});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> first, RunNode("ArgMax", {{"x", x}}, Attrs({{"axis", int64_t{1}}})));
  ASSERT_EQ(first[0].dtype(), DataType::kInt64);
  EXPECT_EQ(first[0].dims(), (Ints{2, 1}));
  EXPECT_EQ(Values(first[0]), (Ints{1, 0}));
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> last,
      RunNode("ArgMax", {{"x", x}}, Attrs({{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}})));
  EXPECT_EQ(Values(last[0]), (Ints{2, 2}));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> axis0, RunNode("ArgMax", {{"x", x}}, Attrs({{"keepdims", int64_t{0}}})));
  EXPECT_EQ(axis0[0].dims(), (Ints{3}));
  EXPECT_EQ(Values(axis0[0]), (Ints{1, 0, 1}));
}

TEST(ArgMaxTest, EmptyAxisIsInvalidArgument) {
  absl::StatusOr<std::vector<Tensor>> y = RunNode("ArgMax", {{"x", Floats({0, 2}, {})}});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
}

}  // namespace
}  // namespace qfuse::runtime::nn_test
