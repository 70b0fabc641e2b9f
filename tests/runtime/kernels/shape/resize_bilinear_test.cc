// Resize in mode linear on float32 NCHW, onnxruntime 1.30's bilinear arithmetic
// (runtime/kernels/shape/resize_bilinear.h): ten cases with onnxruntime's own output bits at
// the positions where plausible other arithmetic gives another float (the four products
// summed in pairs, fused multiply-adds, two 1-D passes, the lerp form a + (b - a) * t,
// coordinates in double) and at the first and last output. The cases cover 16 -> 128 and
// 7 -> 64 with sizes given, downsampling, an axis of 1 (both taps on one pixel, weights
// 0.5), a scale of 0.7 whose output size is float(0.7) * 10 = 7 in float32 (6 in double),
// and the coordinate modes half_pixel, pytorch_half_pixel, align_corners, asymmetric.
// `models/zoo/resize_probe.py --test_rows` prints these rows; the probe itself compares
// every value of 55 models with onnxruntime.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/float_bits.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

enum Given { sizes, scales };

struct OnnxruntimeCase {
  std::string mode;
  std::vector<int64_t> in_dims;
  Given given;
  std::vector<double> sizes_or_scales;
  std::vector<std::pair<int64_t, uint32_t>> y;  // output index, onnxruntime's float bits there
};

// x[i] = float((h(i) mod 20001) - 10000) / 997 with h(i) = i * 2654435761 mod 2^32.
std::vector<float> FormulaInput(int64_t n) {
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    x[i] = static_cast<float>(static_cast<int32_t>(h % 20001u) - 10000) / 997.f;
  }
  return x;
}

TEST(ResizeBilinearTest, OnnxruntimesValues) {
  const OnnxruntimeCase cases[] = {
      {"half_pixel",
       {1, 1, 16, 16},
       sizes,
       {1, 1, 128, 128},
       {{0, 0xc1207b40},
        {7, 0xc10b1864},
        {14, 0xc06c0106},
        {15, 0xc017d8f8},
        {17, 0x3e83b928},
        {18, 0x3fc93e64},
        {516, 0xc10e7512},
        {517, 0xc109ebec},
        {518, 0xc10562c6},
        {519, 0xc100d9a0},
        {16383, 0xc09f9d66}}},
      {"half_pixel",
       {1, 1, 7, 7},
       sizes,
       {1, 1, 64, 64},
       {{0, 0xc1207b40},
        {5, 0xc11b844e},
        {7, 0xc110d2e0},
        {8, 0xc10b7a28},
        {12, 0xc0ec2e9a},
        {13, 0xc0e17d2e},
        {325, 0xc10971d0},
        {326, 0xc1041919},
        {327, 0xc0fd80c5},
        {329, 0xc0e81de9},
        {337, 0xc01554b4},
        {4095, 0xc10041bc}}},
      {"half_pixel",
       {1, 1, 30, 30},
       sizes,
       {1, 1, 7, 11},
       {{0, 0xc029db17},
        {1, 0x3fafbeaa},
        {2, 0x40a6989d},
        {3, 0xc0015ecd},
        {4, 0x3eebd3e8},
        {6, 0xbea1ff34},
        {76, 0x40bc27bf}}},
      {"half_pixel",
       {1, 1, 6, 1},
       sizes,
       {1, 1, 13, 1},
       {{0, 0xc1207b40},
        {3, 0xc0b85b2e},
        {4, 0xbf67ec5c},
        {5, 0x406a6081},
        {6, 0x40a24f9a},
        {8, 0x40240784},
        {9, 0xbfeba198},
        {10, 0x3f331650},
        {12, 0x40f27cca}}},
      {"half_pixel",
       {1, 1, 10, 10},
       scales,
       {1, 1, 0.7, 0.7},
       {{0, 0xc0c418cb},
        {1, 0x3e8b0272},
        {2, 0x40cb4437},
        {3, 0x3fa21d1e},
        {4, 0xc0a8be70},
        {5, 0x3fd9e253},
        {6, 0xbf2e7caa},
        {48, 0x3f6a42fc}}},
      {"pytorch_half_pixel",
       {1, 1, 12, 10},
       scales,
       {1, 1, 2, 2},
       {{0, 0xc1207b40},
        {4, 0x3f6a2cae},
        {7, 0x4086dc4f},
        {8, 0xbf0e717a},
        {12, 0xc0a5a830},
        {22, 0xc07cce71},
        {26, 0x40c048ed},
        {27, 0x408c64a8},
        {36, 0x40638e00},
        {479, 0xc08a2cae}}},
      {"align_corners",
       {1, 1, 5, 9},
       sizes,
       {1, 1, 17, 40},
       {{0, 0xc1207b40},
        {2, 0xc10c6d52},
        {5, 0xc0d690ef},
        {6, 0xc09183c2},
        {7, 0xc018ed2c},
        {8, 0xbe6d2d30},
        {9, 0x3ff68f0c},
        {12, 0x409e8cfe},
        {41, 0xc0fb9479},
        {42, 0xc0db46bb},
        {44, 0xc09aab40},
        {46, 0xbffa00bb},
        {59, 0x3f0c17c8},
        {60, 0x3ee98bd7},
        {679, 0x409e9eaf}}},
      {"align_corners",
       {1, 1, 8, 6},
       scales,
       {1, 1, 8, 8},
       {{0, 0xc1207b40},
        {5, 0xc1067ae4},
        {7, 0xc0f828b1},
        {9, 0xc0e35b99},
        {12, 0xc082169c},
        {13, 0xc03c8dda},
        {14, 0xbfe9dcfb},
        {16, 0x3ed28210},
        {21, 0x40884f3e},
        {49, 0xc118ccb2},
        {51, 0xc10b935d},
        {52, 0xc104f6b0},
        {54, 0xc0ef7ab3},
        {57, 0xc0c7ceaf},
        {3071, 0x410fd6eb}}},
      {"asymmetric",
       {1, 1, 10, 12},
       scales,
       {1, 1, 1.7, 3.3},
       {{0, 0xc1207b40},
        {3, 0xc0e815d9},
        {5, 0xbfc72317},
        {6, 0x3fd0e4f6},
        {7, 0x407a8eaa},
        {14, 0xbec88350},
        {15, 0x4032f38c},
        {40, 0xc02b31a6},
        {42, 0x3feb3d74},
        {43, 0x3fa7e1c8},
        {44, 0xbed07c10},
        {47, 0x3ada8a00},
        {662, 0xc08a2cae}}},
      {"asymmetric",
       {1, 1, 9, 9},
       scales,
       {1, 1, 4, 4},
       {{0, 0xc1207b40},
        {6, 0xbfdb89e2},
        {7, 0x3f6a2cae},
        {13, 0x4086dc4f},
        {15, 0xbf0e717a},
        {23, 0xc0a5a830},
        {37, 0xc0f48377},
        {39, 0xc0a5c5f8},
        {42, 0x3ec0d5a2},
        {46, 0x409500c5},
        {47, 0x40944032},
        {1295, 0xbfd93a49}}},
  };
  for (const OnnxruntimeCase& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.in_dims) n *= d;
    std::vector<NodeInput> inputs = {In(T1<float>(c.in_dims, FormulaInput(n))), Omitted()};
    std::vector<int64_t> want_dims;
    if (c.given == sizes) {
      for (double v : c.sizes_or_scales) want_dims.push_back(static_cast<int64_t>(v));
      inputs.push_back(Omitted());
      inputs.push_back(Const(T1<int64_t>({4}, want_dims)));
    } else {
      std::vector<float> s;
      for (size_t d = 0; d < c.sizes_or_scales.size(); ++d) {
        s.push_back(static_cast<float>(c.sizes_or_scales[d]));
        want_dims.push_back(static_cast<int64_t>(s.back() * static_cast<float>(c.in_dims[d])));
      }
      inputs.push_back(Const(T1<float>({4}, s)));
    }
    ir::AttributeMap a;
    a.Set("mode", std::string("linear"));
    a.Set("coordinate_transformation_mode", c.mode);
    QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Resize", inputs, a));
    const std::string what = c.mode + " " + std::to_string(c.in_dims[2]) + "x" + std::to_string(c.in_dims[3]) + " -> " +
                             std::to_string(want_dims[2]) + "x" + std::to_string(want_dims[3]);
    ASSERT_EQ(y[0].dims(), want_dims) << what;
    const std::vector<float> values = Values<float>(y[0]);
    for (const auto& [index, bits] : c.y) {
      EXPECT_EQ(Bits(values[index]), bits)
          << what << " output " << index << " (" << values[index] << " vs " << Floats({bits})[0] << ")";
    }
  }
}

TEST(ResizeBilinearTest, SameShapeIsTheInput) {
  // onnxruntime copies the input when no output dim changes, even for a scale other than 1
  // (float(1.05) * 10 = 10.5 -> 10).
  const std::vector<float> x = FormulaInput(20);
  ir::AttributeMap a;
  a.Set("mode", std::string("linear"));
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto y,
      RunOneNode("Resize", {In(T1<float>({1, 2, 1, 10}, x)), Omitted(), Const(T1<float>({4}, {1, 1, 1, 1.05f}))}, a));
  EXPECT_EQ(Bits(Values<float>(y[0])), Bits(x));
}

}  // namespace
}  // namespace qfuse::testing
