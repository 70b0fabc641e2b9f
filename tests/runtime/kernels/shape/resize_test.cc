// Resize: hand-computed linear weights at the borders, nearest on int8 with dynamic
// spatial size, tf_crop_and_resize extrapolation and input errors.
#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::DataType;
using ir::Tensor;

ir::AttributeMap Attrs(const std::string& mode, const std::string& coord, const std::string& nearest = "") {
  ir::AttributeMap a;
  a.Set("mode", mode);
  a.Set("coordinate_transformation_mode", coord);
  if (!nearest.empty()) a.Set("nearest_mode", nearest);
  return a;
}

TEST(ResizeTest, LinearHalfPixelClampsAtBorders) {
  // Width 2 -> 4: source x = (j + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25.
  // -0.25 clamps onto x[0]; 1.25 onto x[1]; inside: 0.75*1 + 0.25*3 = 1.5, 0.25*1 + 0.75*3 = 2.5.
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto y, RunOneNode("Resize", {In(T1<float>({1, 1, 1, 2}, {1, 3})), Omitted(), Const(T1<float>({4}, {1, 1, 1, 2}))},
                         Attrs("linear", "half_pixel")));
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{1, 1, 1, 4}));
  EXPECT_EQ(Values<float>(y[0]), (std::vector<float>{1, 1.5f, 2.5f, 3}));
}

TEST(ResizeTest, NearestInt8FollowsInputSize) {
  // scales 2 on both spatial axes, asymmetric + floor (the Upsample form).
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto node, OneNode::Create("Resize", {In(T1<int8_t>({1, 1, 1, 2}, {-5, 7})), Omitted(),
                                            Const(T1<float>({4}, {1, 1, 2, 2}))},
                                 Attrs("nearest", "asymmetric", "floor")));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, node->Run());
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{1, 1, 2, 4}));
  EXPECT_EQ(Values<int8_t>(y[0]), (std::vector<int8_t>{-5, -5, 7, 7, -5, -5, 7, 7}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto z, node->Run({{"in0", T1<int8_t>({2, 1, 1, 1}, {1, 2})}}));
  EXPECT_EQ(z[0].dims(), (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(Values<int8_t>(z[0]), (std::vector<int8_t>{1, 1, 1, 1, 2, 2, 2, 2}));
}

// The innermost axis gathers elements of the element's width (1, 2, 4 or 8 bytes), every
// outer row: uint8 and int64, width 3 -> 7 (asymmetric + floor: source floor(j * 3 / 7)), 40
// outer rows.
TEST(ResizeTest, NearestGathersEveryRowAtEveryElementWidth) {
  const int64_t rows = 40;
  std::vector<uint8_t> u8(rows * 3);
  std::vector<int64_t> i64(rows * 3);
  for (int64_t k = 0; k < rows * 3; ++k) {
    u8[k] = static_cast<uint8_t>(k * 7 + 1);
    i64[k] = (k + 1) * 1000003;
  }
  const std::vector<int64_t> source = {0, 0, 0, 1, 1, 2, 2};  // floor(j * 3 / 7)
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y8, RunOneNode("Resize", {In(T1<uint8_t>({1, rows, 1, 3}, u8)), Omitted(), Omitted(),
                                                            Const(T1<int64_t>({4}, {1, rows, 1, 7}))},
                                                 Attrs("nearest", "asymmetric", "floor")));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y64, RunOneNode("Resize", {In(T1<int64_t>({1, rows, 1, 3}, i64)), Omitted(),
                                                             Omitted(), Const(T1<int64_t>({4}, {1, rows, 1, 7}))},
                                                  Attrs("nearest", "asymmetric", "floor")));
  const std::vector<uint8_t> got8 = Values<uint8_t>(y8[0]);
  const std::vector<int64_t> got64 = Values<int64_t>(y64[0]);
  ASSERT_EQ(got8.size(), static_cast<size_t>(rows * 7));
  ASSERT_EQ(got64.size(), static_cast<size_t>(rows * 7));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < 7; ++j) {
      EXPECT_EQ(got8[r * 7 + j], u8[r * 3 + source[j]]) << r << " " << j;
      EXPECT_EQ(got64[r * 7 + j], i64[r * 3 + source[j]]) << r << " " << j;
    }
  }
}

TEST(ResizeTest, TfCropAndResizeExtrapolates) {
  // 1-D, 3 -> 3 samples of roi [0.5, 1.5] over width 3: x = 1 + j * 2 * 1 / 2 = 1, 2, 3.
  // 3 > in-1 = 2 is outside: extrapolation value.
  ir::AttributeMap a = Attrs("linear", "tf_crop_and_resize");
  a.Set("extrapolation_value", 9.f);
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto y, RunOneNode("Resize", {In(T1<float>({3}, {10, 20, 30})), Const(T1<float>({2}, {0.5f, 1.5f})), Omitted(),
                                    Const(T1<int64_t>({1}, {3}))},
                         a));
  EXPECT_EQ(Values<float>(y[0]), (std::vector<float>{20, 30, 9}));
}

TEST(ResizeTest, CubicOnIdentityScaleIsACopy) {
  std::vector<float> v = {1, -2, 3, 4, 5, 6};
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto y, RunOneNode("Resize", {In(T1<float>({2, 3}, v)), Omitted(), Const(T1<float>({2}, {1, 1}))},
                         Attrs("cubic", "half_pixel")));
  EXPECT_EQ(Values<float>(y[0]), v);
}

TEST(ResizeTest, InputErrors) {
  Tensor x = T1<float>({1, 2}, {1, 2});
  auto neither = RunOneNode("Resize", {In(x)}, Attrs("linear", "half_pixel"));
  EXPECT_EQ(neither.status().code(), absl::StatusCode::kInvalidArgument);
  auto wrong_rank = RunOneNode("Resize", {In(x), Omitted(), Const(T1<float>({1}, {2}))}, Attrs("linear", "half_pixel"));
  EXPECT_EQ(wrong_rank.status().code(), absl::StatusCode::kInvalidArgument);
  auto bad_scale = RunOneNode("Resize", {In(x), Omitted(), Const(T1<float>({2}, {1, -2}))}, Attrs("linear", "half_pixel"));
  EXPECT_EQ(bad_scale.status().code(), absl::StatusCode::kInvalidArgument);
  auto bad_mode = RunOneNode("Resize", {In(x), Omitted(), Const(T1<float>({2}, {1, 2}))}, Attrs("area", "half_pixel"));
  EXPECT_EQ(bad_mode.status().code(), absl::StatusCode::kUnimplemented);
  auto int_linear = RunOneNode("Resize", {In(T1<int8_t>({2}, {1, 2})), Omitted(), Const(T1<float>({1}, {2}))},
                               Attrs("linear", "half_pixel"));
  EXPECT_EQ(int_linear.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace qfuse::testing
