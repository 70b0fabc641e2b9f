// Conv and ConvTranspose kernels: hand-computed cases and the reference kernels
// (runtime/reference) over every path (im2col, implicit row-table GEMM, depthwise, 1x1).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/reference/conv.h"
#include "tests/runtime/kernels/linalg/linalg_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::testing {
namespace {

struct Conv2dSpec {
  int64_t group = 1;
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> dilations = {1, 1};
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
};

ir::AttributeMap Attrs(const Conv2dSpec& s) {
  ir::AttributeMap a;
  a.Set("group", s.group);
  a.Set("strides", s.strides);
  a.Set("dilations", s.dilations);
  a.Set("pads", s.pads);
  return a;
}

// The reference Conv (runtime/reference/conv.h) under `s`; an empty tensor (and a failure)
// when it refuses the shapes.
Tensor ReferenceConv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dSpec& s) {
  absl::StatusOr<Tensor> y = reference::Conv(x, w, bias, {s.group, s.strides, s.dilations, s.pads, {}});
  EXPECT_TRUE(y.ok()) << y.status();
  return y.ok() ? *std::move(y) : Tensor();
}

TEST(ConvTest, GroupedHandComputed) {
  // Channel 0 is 1..9, channel 1 all ones; group 0 sums the 2x2 diagonal, group 1 the
  // whole 2x2 window, plus bias.
  Tensor x = Floats({1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  Tensor w = Floats({2, 1, 2, 2}, {1, 0, 0, 1, 1, 1, 1, 1});
  Tensor b = Floats({2}, {0, 10});
  ir::AttributeMap attrs;
  attrs.Set("group", int64_t{2});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Conv", {In("x", x), In("w", w), In("b", b)}, attrs));
  ExpectNear(y, Floats({1, 2, 2, 2}, {6, 8, 12, 14, 14, 14, 14, 14}));
}

TEST(ConvTest, AsymmetricPaddingStrided) {
  // x[r][c] = 1 + 4r + c; 3x3 ones kernel, stride 2, one row of padding on top and one
  // column on the right.
  std::vector<float> xs(16);
  for (int i = 0; i < 16; ++i) xs[i] = 1.0f + i;
  ir::AttributeMap attrs;
  attrs.Set("strides", std::vector<int64_t>{2, 2});
  attrs.Set("pads", std::vector<int64_t>{1, 0, 0, 1});
  attrs.Set("kernel_shape", std::vector<int64_t>{3, 3});
  QFUSE_ASSERT_OK_AND_ASSIGN(
      Tensor y, RunNode("Conv", {In("x", Floats({1, 1, 4, 4}, xs)), In("w", Floats({1, 1, 3, 3}, std::vector<float>(9, 1)))},
                        attrs));
  ExpectNear(y, Floats({1, 1, 2, 2}, {24, 22, 90, 69}));
}

TEST(ConvTest, AutoPadSameUpperAndLower) {
  // 1-D: x = 1..5, kernel [1, 10], stride 2: out = 3, total padding 1.
  Tensor x = Floats({1, 1, 5}, {1, 2, 3, 4, 5});
  Tensor w = Floats({1, 1, 2}, {1, 10});
  ir::AttributeMap upper;
  upper.Set("auto_pad", std::string("SAME_UPPER"));
  upper.Set("strides", std::vector<int64_t>{2});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor yu, RunNode("Conv", {In("x", x), In("w", w)}, upper));
  ExpectNear(yu, Floats({1, 1, 3}, {21, 43, 5}));  // padding at the end
  ir::AttributeMap lower = upper;
  lower.Set("auto_pad", std::string("SAME_LOWER"));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor yl, RunNode("Conv", {In("x", x), In("w", w)}, lower));
  ExpectNear(yl, Floats({1, 1, 3}, {10, 32, 54}));  // padding at the start
}

struct ConvCase {
  const char* name;
  int64_t cin, cout, k;
  Conv2dSpec spec;
};

TEST(ConvTest, MatchesReferenceConstAndInputWeights) {
  const std::vector<ConvCase> cases = {
      {"dense3x3", 5, 7, 3, {1, {1, 1}, {1, 1}, {1, 1, 1, 1}}},
      {"grouped_strided_dilated", 6, 4, 3, {2, {2, 1}, {1, 2}, {0, 2, 1, 0}}},
      {"pointwise", 8, 6, 1, {}},
      {"pointwise_grouped", 8, 6, 1, {2, {1, 1}, {1, 1}, {0, 0, 0, 0}}},
      {"strided_pointwise", 4, 3, 1, {1, {2, 2}, {1, 1}, {0, 0, 0, 0}}},
      {"depthwise", 6, 6, 3, {6, {1, 1}, {1, 1}, {1, 1, 1, 1}}},
      {"depthwise_strided", 6, 6, 3, {6, {2, 2}, {1, 1}, {1, 0, 0, 1}}},
      {"depthwise_multiplier", 3, 6, 3, {3, {1, 2}, {2, 1}, {2, 1, 0, 1}}},
  };
  uint32_t seed = 1;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = Random({3, c.cin, 9, 8}, seed++);
    Tensor w = Random({c.cout, c.cin / c.spec.group, c.k, c.k}, seed++);
    Tensor b = Random({c.cout}, seed++);
    const Tensor expected = ReferenceConv2d(x, w, &b, c.spec);
    QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y_in, RunNode("Conv", {In("x", x), In("w", w), In("b", b)}, Attrs(c.spec)));
    QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y_const,
                               RunNode("Conv", {In("x", x), Const("w", w), Const("b", b)}, Attrs(c.spec)));
    ExpectNear(y_in, expected);
    ExpectNear(y_const, expected);
    QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y_nobias, RunNode("Conv", {In("x", x), Const("w", w)}, Attrs(c.spec)));
    ExpectNear(y_nobias, ReferenceConv2d(x, w, nullptr, c.spec));
  }
}

TEST(ConvTest, WideDepthwiseAndDenseRows) {
  // Rows wide enough for the vector blocks of the depthwise loop (16, 8, overlapping
  // tail) and for several GEMM column panels.
  const std::vector<ConvCase> cases = {
      {"depthwise_wide", 4, 4, 3, {4, {1, 1}, {1, 1}, {1, 1, 1, 1}}},
      {"depthwise_wide_5x5_dilated", 4, 4, 5, {4, {1, 1}, {1, 2}, {2, 4, 2, 3}}},
      {"depthwise_wide_strided", 4, 8, 3, {4, {2, 2}, {1, 1}, {1, 1, 1, 1}}},
      {"dense_wide", 3, 20, 3, {1, {1, 1}, {1, 1}, {1, 1, 1, 1}}},
  };
  uint32_t seed = 100;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = Random({2, c.cin, 7, 45}, seed++);
    Tensor w = Random({c.cout, c.cin / c.spec.group, c.k, c.k}, seed++);
    Tensor b = Random({c.cout}, seed++);
    QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Conv", {In("x", x), Const("w", w), Const("b", b)}, Attrs(c.spec)));
    ExpectNear(y, ReferenceConv2d(x, w, &b, c.spec));
  }
}

TEST(ConvTest, LargeImagesInRowBlocks) {
  // Images large enough that each (image, group) GEMM is split into several blocks of
  // output rows (unit-stride convs without an im2col matrix on AVX-512 CPUs, im2col per
  // block otherwise), at batch 1 (blocks spread over the pool) and batch 2.
  const std::vector<ConvCase> cases = {
      {"dense3x3", 16, 24, 3, {1, {1, 1}, {1, 1}, {1, 1, 1, 1}}},
      {"grouped_dilated_asymmetric", 16, 24, 3, {2, {1, 1}, {2, 1}, {0, 2, 1, 0}}},
      {"wide_pads_5x5", 8, 12, 5, {1, {1, 1}, {1, 3}, {3, 4, 0, 5}}},
      {"valid_2x2", 12, 8, 2, {1, {1, 1}, {1, 1}, {0, 0, 0, 0}}},
      {"strided", 16, 24, 3, {1, {2, 1}, {1, 1}, {1, 1, 1, 1}}},
      {"pointwise", 16, 24, 1, {}},
  };
  uint32_t seed = 300;
  for (const int64_t batch : {1, 2}) {
    for (const ConvCase& c : cases) {
      SCOPED_TRACE(std::string(c.name) + " batch " + std::to_string(batch));
      Tensor x = Random({batch, c.cin, 40, 50}, seed++);
      Tensor w = Random({c.cout, c.cin / c.spec.group, c.k, c.k}, seed++);
      Tensor b = Random({c.cout}, seed++);
      QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y,
                                 RunNode("Conv", {In("x", x), Const("w", w), Const("b", b)}, Attrs(c.spec)));
      ExpectNear(y, ReferenceConv2d(x, w, &b, c.spec));
      QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y_nobias, RunNode("Conv", {In("x", x), Const("w", w)}, Attrs(c.spec)));
      ExpectNear(y_nobias, ReferenceConv2d(x, w, nullptr, c.spec));
    }
  }
}

TEST(ConvTest, DynamicBatchSameExecutor) {
  Conv2dSpec spec{1, {1, 1}, {1, 1}, {1, 1, 1, 1}};
  Tensor w = Random({4, 3, 3, 3}, 7);
  Tensor x3 = Random({3, 3, 6, 6}, 8);
  QFUSE_ASSERT_OK_AND_ASSIGN(OneNodeModel m, OneNodeModel::Create("Conv", {In("x", x3), Const("w", w)}, Attrs(spec)));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y3, m.Run({{"x", x3}}));
  ExpectNear(y3, ReferenceConv2d(x3, w, nullptr, spec));
  // Batch 1: the second image alone.
  std::vector<float> second(x3.values<float>().begin() + 108, x3.values<float>().begin() + 216);
  Tensor x1 = Floats({1, 3, 6, 6}, second);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y1, m.Run({{"x", x1}}));
  ASSERT_EQ(y1.dims(), (std::vector<int64_t>{1, 4, 6, 6}));
  for (int64_t i = 0; i < y1.num_elements(); ++i) {
    EXPECT_NEAR(y1.values<float>()[i], y3.values<float>()[144 + i], 1e-5) << i;
  }
}

TEST(ConvTest, OneAndThreeDimensional) {
  // 1-D conv as a 2-D conv with H = 1; 3-D conv with a 1-deep kernel likewise.
  Tensor x = Random({2, 3, 1, 10}, 11);
  Tensor w = Random({4, 3, 1, 3}, 12);
  Conv2dSpec spec{1, {1, 2}, {1, 1}, {0, 1, 0, 2}};
  const Tensor expected = ReferenceConv2d(x, w, nullptr, spec);
  Tensor x1 = x, w1 = w;
  ASSERT_TRUE(x1.SetDims({2, 3, 10}).ok());
  ASSERT_TRUE(w1.SetDims({4, 3, 3}).ok());
  ir::AttributeMap a1;
  a1.Set("strides", std::vector<int64_t>{2});
  a1.Set("pads", std::vector<int64_t>{1, 2});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y1, RunNode("Conv", {In("x", x1), In("w", w1)}, a1));
  Tensor e1 = expected;
  ASSERT_TRUE(e1.SetDims({2, 4, e1.dims()[3]}).ok());
  ExpectNear(y1, e1);
  Tensor x3 = x, w3 = w;
  ASSERT_TRUE(x3.SetDims({2, 3, 1, 1, 10}).ok());
  ASSERT_TRUE(w3.SetDims({4, 3, 1, 1, 3}).ok());
  ir::AttributeMap a3;
  a3.Set("strides", std::vector<int64_t>{1, 1, 2});
  a3.Set("pads", std::vector<int64_t>{0, 0, 1, 0, 0, 2});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y3, RunNode("Conv", {In("x", x3), In("w", w3)}, a3));
  Tensor e3 = expected;
  ASSERT_TRUE(e3.SetDims({2, 4, 1, 1, e3.dims()[3]}).ok());
  ExpectNear(y3, e3);
}

TEST(ConvTest, ThreeDimensionalKernelsMatchReference) {
  // Kernels deeper than 1: im2col and col2im over all three dims, grouped, strided, dilated.
  ir::AttributeMap attrs;
  attrs.Set("group", int64_t{2});
  attrs.Set("strides", std::vector<int64_t>{1, 2, 1});
  attrs.Set("dilations", std::vector<int64_t>{2, 1, 1});
  attrs.Set("pads", std::vector<int64_t>{1, 0, 1, 0, 1, 1});
  const reference::ConvParams params{2, {1, 2, 1}, {2, 1, 1}, {1, 0, 1, 0, 1, 1}, {}};
  Tensor x = Random({2, 4, 5, 6, 7}, 41);
  Tensor w = Random({6, 2, 3, 2, 3}, 42);
  Tensor b = Random({6}, 43);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor expected, reference::Conv(x, w, &b, params));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Conv", {In("x", x), Const("w", w), Const("b", b)}, attrs));
  ExpectNear(y, expected);
  Tensor wt = Random({4, 3, 2, 3, 2}, 44);  // ConvTranspose: [Cin, Cout / group, k...]
  attrs.Set("output_padding", std::vector<int64_t>{1, 0, 0});
  reference::ConvParams transpose_params = params;
  transpose_params.output_padding = {1, 0, 0};
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor expected_t, reference::ConvTranspose(x, wt, &b, transpose_params));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor yt, RunNode("ConvTranspose", {In("x", x), Const("w", wt), Const("b", b)}, attrs));
  ExpectNear(yt, expected_t);
}

TEST(ConvTest, BadShapesAreErrors) {
  Tensor x = Random({1, 3, 5, 5}, 1);
  EXPECT_FALSE(RunNode("Conv", {In("x", x), In("w", Random({2, 2, 3, 3}, 2))}).ok());  // channel mismatch
  EXPECT_FALSE(RunNode("Conv", {In("x", x), In("w", Random({2, 3, 7, 7}, 2))}).ok());  // kernel too big
  EXPECT_FALSE(RunNode("Conv", {In("x", x), In("w", Random({2, 3, 3}, 2))}).ok());     // rank mismatch
  EXPECT_FALSE(RunNode("Conv", {In("x", x), In("w", Random({2, 3, 3, 3}, 2)), In("b", Random({3}, 3))}).ok());
}

// The reference ConvTranspose under `s` and output_padding.
Tensor ReferenceConvTranspose2d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dSpec& s,
                                const std::vector<int64_t>& output_padding) {
  absl::StatusOr<Tensor> y = reference::ConvTranspose(x, w, bias, {s.group, s.strides, s.dilations, s.pads, output_padding});
  EXPECT_TRUE(y.ok()) << y.status();
  return y.ok() ? *std::move(y) : Tensor();
}

TEST(ConvTransposeTest, OutputPaddingHandComputed) {
  // Stride 2 with a 2x2 kernel: every input pixel becomes x * w in its own 2x2 block;
  // output_padding adds a last row and column holding only the bias.
  Tensor x = Floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = Floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor b = Floats({1}, {0.5f});
  ir::AttributeMap attrs;
  attrs.Set("strides", std::vector<int64_t>{2, 2});
  attrs.Set("output_padding", std::vector<int64_t>{1, 1});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("ConvTranspose", {In("x", x), In("w", w), In("b", b)}, attrs));
  ExpectNear(y, Floats({1, 1, 5, 5}, {1.5, 2.5, 2.5, 4.5, 0.5,  //
                                       3.5, 4.5, 6.5, 8.5, 0.5,  //
                                       3.5, 6.5, 4.5, 8.5, 0.5,  //
                                       9.5, 12.5, 12.5, 16.5, 0.5,  //
                                       0.5, 0.5, 0.5, 0.5, 0.5}));
}

TEST(ConvTransposeTest, MatchesReferenceGroupedStridedPadded) {
  Conv2dSpec spec{2, {2, 3}, {2, 1}, {1, 0, 2, 1}};
  const std::vector<int64_t> output_padding = {1, 2};
  Tensor x = Random({3, 4, 5, 4}, 21);
  Tensor w = Random({4, 3, 3, 2}, 22);  // [Cin, Cout/group, kh, kw]
  Tensor b = Random({6}, 23);
  ir::AttributeMap attrs = Attrs(spec);
  attrs.Set("output_padding", output_padding);
  const Tensor expected = ReferenceConvTranspose2d(x, w, &b, spec, output_padding);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y_in, RunNode("ConvTranspose", {In("x", x), In("w", w), In("b", b)}, attrs));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y_const,
                             RunNode("ConvTranspose", {In("x", x), Const("w", w), Const("b", b)}, attrs));
  ExpectNear(y_in, expected);
  ExpectNear(y_const, expected);
}

TEST(ConvTransposeTest, OutputShapeAttribute) {
  // output_shape larger than the natural size: the extra rows/cols get no taps.
  Tensor x = Random({1, 2, 3, 3}, 31);
  Tensor w = Random({2, 1, 3, 3}, 32);
  ir::AttributeMap attrs;
  attrs.Set("strides", std::vector<int64_t>{2, 2});
  attrs.Set("output_shape", std::vector<int64_t>{8, 7});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("ConvTranspose", {In("x", x), In("w", w)}, attrs));
  Conv2dSpec spec{1, {2, 2}, {1, 1}, {0, 0, 0, 0}};
  ExpectNear(y, ReferenceConvTranspose2d(x, w, nullptr, spec, {1, 0}));
}

}  // namespace
}  // namespace qfuse::runtime::testing
