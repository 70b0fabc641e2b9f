// MaxPool / AveragePool / global pools against hand-computed values, for the cases the
// ONNX node tests miss (ceil mode with pads at the border, storage order, dynamic batch,
// int8, errors).
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/reference/pool.h"
#include "tests/runtime/kernels/nn/nn_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::nn_test {
namespace {

using Ints = std::vector<int64_t>;

// 1x1x4x4 holding 1..16 row by row.
Tensor Ramp4x4() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  return Floats({1, 1, 4, 4}, v);
}

ir::AttributeMap CeilPadAttrs(int64_t count_include_pad) {
  return Attrs({{"kernel_shape", Ints{3, 3}},
                {"strides", Ints{2, 2}},
                {"pads", Ints{1, 1, 1, 1}},
                {"ceil_mode", int64_t{1}},
                {"count_include_pad", count_include_pad}});
}

// Windows per dim start at -1, 1, 3: the last one covers input row 3 and one padded
// row; it is kept because it starts inside the input.
TEST(AveragePoolTest, CeilModeWithPadsExcludesPadFromDivisor) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, RunNode("AveragePool", {{"x", Ramp4x4()}}, CeilPadAttrs(0)));
  ExpectFloatsNear(y[0], {1, 1, 3, 3}, {3.5f, 5.0f, 6.0f, 9.5f, 11.0f, 12.0f, 13.5f, 15.0f, 16.0f});
}

// The divisor counts taps inside the padded input, never those past the end padding.
TEST(AveragePoolTest, CeilModeWithPadsCountIncludePad) {
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, RunNode("AveragePool", {{"x", Ramp4x4()}}, CeilPadAttrs(1)));
  ExpectFloatsNear(y[0], {1, 1, 3, 3},
                   {14.0f / 9, 30.0f / 9, 12.0f / 6, 57.0f / 9, 99.0f / 9, 36.0f / 6, 27.0f / 6, 45.0f / 6, 16.0f / 4});
}

TEST(AveragePoolTest, SameLowerAndUpperPutExtraPadOnOppositeSides) {
  const Tensor x = Floats({1, 1, 5}, {1, 2, 3, 4, 5});
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> lower,
      RunNode("AveragePool", {{"x", x}}, Attrs({{"kernel_shape", Ints{2}}, {"auto_pad", std::string("SAME_LOWER")}})));
  ExpectFloatsNear(lower[0], {1, 1, 5}, {1.0f, 1.5f, 2.5f, 3.5f, 4.5f});
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> upper,
      RunNode("AveragePool", {{"x", x}}, Attrs({{"kernel_shape", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}})));
  ExpectFloatsNear(upper[0], {1, 1, 5}, {1.5f, 2.5f, 3.5f, 4.5f, 5.0f});
}

TEST(AveragePoolTest, ThreeDimensionalWindow) {
  const Tensor x = Floats({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y,
                             RunNode("AveragePool", {{"x", x}}, Attrs({{"kernel_shape", Ints{2, 2, 2}}})));
  ExpectFloatsNear(y[0], {1, 1, 1, 1, 1}, {4.5f});
}

// Two channels: the indices include the channel offset (6) and follow storage_order.
Tensor TwoChannels2x3() { return Floats({1, 2, 2, 3}, {1, 5, 2, 4, 3, 6, 0, -1, 7, 8, 2, 2}); }

TEST(MaxPoolTest, IndicesRowMajor) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y, RunNode("MaxPool", {{"x", TwoChannels2x3()}}, Attrs({{"kernel_shape", Ints{2, 2}}}), 2));
  ExpectFloatsNear(y[0], {1, 2, 1, 2}, {5, 6, 8, 7});
  ASSERT_EQ(y[1].dtype(), DataType::kInt64);
  EXPECT_EQ(y[1].dims(), (Ints{1, 2, 1, 2}));
  EXPECT_EQ(std::vector<int64_t>(y[1].values<int64_t>().begin(), y[1].values<int64_t>().end()), (Ints{1, 5, 9, 8}));
}

TEST(MaxPoolTest, IndicesColumnMajor) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y,
      RunNode("MaxPool", {{"x", TwoChannels2x3()}},
              Attrs({{"kernel_shape", Ints{2, 2}}, {"storage_order", int64_t{1}}}), 2));
  ExpectFloatsNear(y[0], {1, 2, 1, 2}, {5, 6, 8, 7});
  EXPECT_EQ(std::vector<int64_t>(y[1].values<int64_t>().begin(), y[1].values<int64_t>().end()), (Ints{2, 5, 7, 10}));
}

TEST(MaxPoolTest, Dilations) {
  const Tensor x = Floats({1, 1, 6}, {3, 1, 4, 1, 5, 9});
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y, RunNode("MaxPool", {{"x", x}}, Attrs({{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}})));
  ExpectFloatsNear(y[0], {1, 1, 4}, {4, 1, 5, 9});
}

TEST(MaxPoolTest, Int8KeepsTypeAndLowestValue) {
  const Tensor x = Tensor::FromVector<int8_t>({1, 1, 4}, std::vector<int8_t>{-128, -128, 7, -100});
  QFUSE_ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> y, RunNode("MaxPool", {{"x", x}}, Attrs({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}), 2));
  ASSERT_EQ(y[0].dtype(), DataType::kInt8);
  ASSERT_EQ(y[0].dims(), (Ints{1, 1, 2}));
  EXPECT_EQ(y[0].data<int8_t>()[0], -128);
  EXPECT_EQ(y[0].data<int8_t>()[1], 7);
  EXPECT_EQ(y[1].data<int64_t>()[0], 0);
  EXPECT_EQ(y[1].data<int64_t>()[1], 2);
}

TEST(MaxPoolTest, DynamicBatchReusesKernel) {
  ir::Graph graph;
  QFUSE_ASSERT_OK(BuildOneNode(&graph, "MaxPool", {{"x", Floats({1, 1, 4}, {0, 0, 0, 0})}},
                               Attrs({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}), 1));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(graph));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> one, exec->Run({{"x", Floats({1, 1, 4}, {1, 2, 4, 3})}}));
  ExpectFloatsNear(one[0].tensor, {1, 1, 2}, {2, 4});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> three,
                             exec->Run({{"x", Floats({3, 1, 4}, {1, 2, 4, 3, -1, -2, -4, -3, 9, 8, 7, 6})}}));
  ExpectFloatsNear(three[0].tensor, {3, 1, 2}, {2, 4, -1, -3, 9, 7});
}

// The reference pool (runtime/reference/pool.h): k x k windows, stride s, `pad` on every side,
// the average over the taps inside x.
std::vector<float> ReferencePool2d(const Tensor& x, bool is_max, int64_t k, int64_t s, int64_t pad) {
  reference::PoolParams params;
  params.kind = is_max ? reference::PoolParams::Kind::kMax : reference::PoolParams::Kind::kAverage;
  params.kernel_shape = {k, k};
  params.strides = {s, s};
  params.pads = {pad, pad, pad, pad};
  absl::StatusOr<Tensor> y = reference::Pool(x, params);
  EXPECT_TRUE(y.ok()) << y.status();
  return y.ok() ? std::vector<float>(y->values<float>().begin(), y->values<float>().end()) : std::vector<float>();
}

// Large enough that ParallelFor splits the channels across threads; strides 1 and 2
// take the contiguous and the strided column loops.
TEST(PoolTest, LargeInputMatchesReference) {
  Tensor x(DataType::kFloat32, {4, 16, 40, 40});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>((i * 7919) % 1009) / 100.0f;
  for (const char* op : {"MaxPool", "AveragePool"}) {
    for (int64_t stride : {1, 2}) {
      SCOPED_TRACE(std::string(op) + " stride " + std::to_string(stride));
      const int64_t out = (40 + 2 - 3) / stride + 1;
      QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y,
                                 RunNode(op, {{"x", x}},
                                         Attrs({{"kernel_shape", Ints{3, 3}},
                                                {"strides", Ints{stride, stride}},
                                                {"pads", Ints{1, 1, 1, 1}}})));
      ExpectFloatsNear(y[0], {4, 16, out, out}, ReferencePool2d(x, std::string(op) == "MaxPool", 3, stride, 1));
    }
  }
}

TEST(PoolErrorTest, InputRankMustMatchKernelShape) {
  absl::StatusOr<std::vector<Tensor>> y =
      RunNode("MaxPool", {{"x", Floats({1, 4, 4}, std::vector<float>(16))}}, Attrs({{"kernel_shape", Ints{2, 2}}}));
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
  EXPECT_NE(y.status().message().find("rank 4"), absl::string_view::npos) << y.status();
}

TEST(PoolErrorTest, WindowLargerThanPaddedInput) {
  absl::StatusOr<std::vector<Tensor>> y =
      RunNode("AveragePool", {{"x", Floats({1, 1, 2}, {1, 2})}}, Attrs({{"kernel_shape", Ints{3}}}));
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
}

TEST(PoolErrorTest, BadAttributesFailAtCreate) {
  const Tensor x = Floats({1, 1, 2}, {1, 2});
  EXPECT_EQ(RunNode("MaxPool", {{"x", x}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunNode("MaxPool", {{"x", x}}, Attrs({{"kernel_shape", Ints{1, 1, 1, 1}}})).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(
      RunNode("MaxPool", {{"x", x}}, Attrs({{"kernel_shape", Ints{1}}, {"auto_pad", std::string("WRONG")}}))
          .status()
          .code(),
      absl::StatusCode::kUnimplemented);
  EXPECT_EQ(RunNode("MaxPool", {{"x", x}}, Attrs({{"kernel_shape", Ints{1}}, {"strides", Ints{0}}})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GlobalPoolTest, AverageAndMaxPerChannel) {
  const Tensor x = Floats({1, 2, 2, 2}, {1, 2, 3, 6, -1, -5, -2, -3});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> avg, RunNode("GlobalAveragePool", {{"x", x}}));
  ExpectFloatsNear(avg[0], {1, 2, 1, 1}, {3.0f, -2.75f});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> max, RunNode("GlobalMaxPool", {{"x", x}}));
  ExpectFloatsNear(max[0], {1, 2, 1, 1}, {6.0f, -1.0f});
}

TEST(GlobalPoolTest, DynamicBatch) {
  ir::Graph graph;
  QFUSE_ASSERT_OK(BuildOneNode(&graph, "GlobalAveragePool", {{"x", Floats({1, 1, 2}, {0, 0})}}, {}, 1));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(graph));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> one, exec->Run({{"x", Floats({1, 1, 2}, {1, 3})}}));
  ExpectFloatsNear(one[0].tensor, {1, 1, 1}, {2});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> two, exec->Run({{"x", Floats({2, 1, 2}, {1, 3, 5, 8})}}));
  ExpectFloatsNear(two[0].tensor, {2, 1, 1}, {2, 6.5f});
}

}  // namespace
}  // namespace qfuse::runtime::nn_test
