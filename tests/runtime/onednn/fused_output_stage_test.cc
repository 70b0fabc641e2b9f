// The output stage inside oneDNN's int8 convolution (runtime/onednn/fused_output_stage.h):
// which stages qualify, the exactness bound at its edge, and the bytes of hand-built QDQ conv
// units with tie-heavy power-of-two multipliers, and of the samples' integer-head units, against
// qfuse's hand-written integer kernels.
#include "runtime/onednn/fused_output_stage.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "calib/thresholds.h"
#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/int8/byte_table.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/onednn/int8_conv_engine.h"
#include "runtime/onednn/qlinear_conv_kernel.h"
#include "tests/runtime/onednn/int8_values.h"
#include "tests/runtime/onednn/square_conv.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

int8::OutputStageSpec UnitSpec() {
  int8::OutputStageSpec spec;
  spec.mode = numerics::RequantizeMode::kOnnx;
  spec.output_type = ir::DataType::kUint8;
  spec.output_scale = 0.05f;
  spec.output_zero_point = 7;
  spec.a.input_scale = 0.02f;
  spec.a.weight_scales = {0.01f, 0.03f};
  spec.act_min = 0.f;  // Relu: lo = zp
  return spec;
}

// Two channels of k weights each: channel 0 all 127, channel 1 all -127.
ir::Tensor Weights(int64_t k) {
  std::vector<int8_t> w(static_cast<size_t>(2 * k), 127);
  for (int64_t i = k; i < 2 * k; ++i) w[i] = -127;
  return ir::Tensor::FromVector<int8_t>({2, k, 1, 1}, w);
}

TEST(MakeFusedOutputStageTest, TheFormOfAOneTermStage) {
  QFUSE_ASSERT_OK_AND_ASSIGN(int8::OutputStage stage, int8::OutputStage::Create(UnitSpec()));
  std::optional<FusedOutputStage> fused = MakeFusedOutputStage(stage, Weights(16), {5, -9}, FusedSource::kUint8);
  ASSERT_TRUE(fused.has_value());
  EXPECT_EQ(fused->bias, (std::vector<int32_t>{5, -9}));
  EXPECT_EQ(fused->form.multipliers, (std::vector<float>{numerics::OnnxMultiplier(0.02f, 0.01f, 0.05f),
                                                         numerics::OnnxMultiplier(0.02f, 0.03f, 0.05f)}));
  EXPECT_EQ(fused->form.divisor, 1.f);
  EXPECT_EQ(fused->form.lo, 0.f);    // Relu: the zero point, minus the zero point
  EXPECT_EQ(fused->form.hi, 248.f);  // 255 - 7
  EXPECT_EQ(fused->form.zero_point, 7);
}

TEST(MakeFusedOutputStageTest, TheIntegerHeadFormDividesByTheOutputScale) {
  int8::OutputStageSpec spec = UnitSpec();
  spec.dequantize_then_quantize = true;
  QFUSE_ASSERT_OK_AND_ASSIGN(int8::OutputStage stage, int8::OutputStage::Create(spec));
  std::optional<FusedOutputStage> fused = MakeFusedOutputStage(stage, Weights(16), {}, FusedSource::kUint8);
  ASSERT_TRUE(fused.has_value());
  EXPECT_EQ(fused->form.divisor, 0.05f);
  EXPECT_EQ(fused->form.multipliers, (std::vector<float>{0.02f * 0.01f, 0.02f * 0.03f}));
}

// A linear byte map (a folded clamp: here the bytes halved, r -> round(r * 0.5) + 3 within
// [3, 100]) comes with the form.
TEST(MakeFusedOutputStageTest, ALinearByteMapComesWithTheForm) {
  QFUSE_ASSERT_OK_AND_ASSIGN(int8::OutputStage stage, int8::OutputStage::Create(UnitSpec()));
  int8::ByteTable halved;
  for (int i = 0; i < 256; ++i) {
    const float f = std::clamp((i - 7) * 0.5f, 0.f, 97.f);
    halved[i] = static_cast<uint8_t>(numerics::RoundHalfToEven(f) + 3);
  }
  stage.SetByteMap(halved, ir::DataType::kUint8, 0.5f);
  ASSERT_TRUE(stage.has_linear_byte_map());
  std::optional<FusedOutputStage> fused = MakeFusedOutputStage(stage, Weights(16), {}, FusedSource::kUint8);
  ASSERT_TRUE(fused.has_value());
  ASSERT_TRUE(fused->form.map.has_value());
  EXPECT_EQ(fused->form.map->ratio, 0.5f);
  EXPECT_EQ(fused->form.map->zero_point, 3);
  EXPECT_EQ(fused->form.map->lo, 0.f);
  EXPECT_EQ(fused->form.map->hi, 97.f);
}

// uint8 sources: 255 * 127 * 518 = 16775430, 2^24 - 16775430 = 1786: a bias of 1786 keeps
// every sum an exact float32 integer, 1787 does not. int8 sources, which oneDNN multiplies as
// x + 128: 383 * 127 * 344 = 16732504, 2^24 - 16732504 = 44712.
TEST(MakeFusedOutputStageTest, BoundAtItsEdge) {
  QFUSE_ASSERT_OK_AND_ASSIGN(int8::OutputStage stage, int8::OutputStage::Create(UnitSpec()));
  EXPECT_TRUE(MakeFusedOutputStage(stage, Weights(518), {1786, -1786}, FusedSource::kUint8).has_value());
  EXPECT_FALSE(MakeFusedOutputStage(stage, Weights(518), {0, -1787}, FusedSource::kUint8).has_value());
  EXPECT_TRUE(MakeFusedOutputStage(stage, Weights(518), {}, FusedSource::kUint8).has_value());
  EXPECT_FALSE(MakeFusedOutputStage(stage, Weights(519), {}, FusedSource::kUint8).has_value());
  EXPECT_TRUE(MakeFusedOutputStage(stage, Weights(344), {44712, 0}, FusedSource::kInt8).has_value());
  EXPECT_FALSE(MakeFusedOutputStage(stage, Weights(344), {0, -44713}, FusedSource::kInt8).has_value());
  EXPECT_TRUE(MakeFusedOutputStage(stage, Weights(344), {0, -44713}, FusedSource::kUint8).has_value());
}

TEST(MakeFusedOutputStageTest, OtherStagesStayWithQfuse) {
  int8::OutputStageSpec fixed = UnitSpec();
  fixed.mode = numerics::RequantizeMode::kFixed;
  int8::OutputStageSpec two_terms = UnitSpec();
  two_terms.has_b = true;
  two_terms.b.input_scale = 0.04f;
  int8::OutputStageSpec float_out = UnitSpec();
  float_out.output_type = ir::DataType::kFloat32;
  // s_x * s_w overflows float32: its NaN / inf results stay with qfuse's clamp.
  int8::OutputStageSpec overflowing = UnitSpec();
  overflowing.dequantize_then_quantize = true;
  overflowing.a.input_scale = 1e30f;
  overflowing.a.weight_scales = {1e30f, 1e30f};
  for (const int8::OutputStageSpec& spec : {fixed, two_terms, float_out, overflowing}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(int8::OutputStage stage, int8::OutputStage::Create(spec));
    EXPECT_FALSE(MakeFusedOutputStage(stage, Weights(16), {}, FusedSource::kUint8).has_value());
  }
  // A byte map without a linear form (every byte reversed) stays with qfuse.
  QFUSE_ASSERT_OK_AND_ASSIGN(int8::OutputStage mapped, int8::OutputStage::Create(UnitSpec()));
  int8::ByteTable reversed;
  for (int i = 0; i < 256; ++i) reversed[i] = static_cast<uint8_t>(255 - i);
  mapped.SetByteMap(reversed, ir::DataType::kUint8, 1.f);
  ASSERT_FALSE(mapped.has_linear_byte_map());
  EXPECT_FALSE(MakeFusedOutputStage(mapped, Weights(16), {}, FusedSource::kUint8).has_value());
  QFUSE_ASSERT_OK_AND_ASSIGN(int8::OutputStage stage, int8::OutputStage::Create(UnitSpec()));
  SetOutputStageFusion(false);
  EXPECT_FALSE(MakeFusedOutputStage(stage, Weights(16), {}, FusedSource::kUint8).has_value());
  SetOutputStageFusion(true);
  EXPECT_TRUE(MakeFusedOutputStage(stage, Weights(16), {}, FusedSource::kUint8).has_value());
}

struct UnitCase {
  std::string name;
  int64_t cin, cout, size, kernel, stride, group;
  ir::DataType type;
  std::string activation;  // "", "Relu" or "Clip" (0, 6)
  // The activation as a separate op between the unit's own grid (scale 1) and the output's
  // (scale 2), which the lowering folds into the unit as a linear byte map of ratio 0.5.
  bool folded_clamp = false;
  bool per_tensor_weights = false;  // one weight scale (oneDNN's scale mask 0)
  // Output zero point 0: without an activation (or with a Relu on uint8) oneDNN's conversion
  // clips and rounds; with the other zero points it clips where there is no activation.
  bool zero_output_zero_point = false;
};

// The first 4-D constant INT8 weights of a graph.
const ir::Tensor* AnyConvWeights(const ir::Graph& graph) {
  for (const ir::Node* n : graph.nodes()) {
    for (const ir::Value* v : n->inputs()) {
      if (v != nullptr && v->is_constant() && v->initializer()->rank() == 4 &&
          v->initializer()->dtype() == ir::DataType::kInt8) {
        return v->initializer();
      }
    }
  }
  return nullptr;
}

class FusedOutputStageBytesTest : public ::testing::TestWithParam<UnitCase> {};

// x -> Conv (+ bias) -> [Relu | Clip] -> y as one integer unit (or with the clamp folded in). The multipliers
// s_x * s_w[c] / s_y are powers of two (2^-6 .. 2^-9), so many accumulators land on a half:
// ties to even and the zero point added after the rounding both show. Weights lie in
// [-64, 64], so oneDNN's accumulators are exact at AVX2 too and the stage fuses there as well.
TEST_P(FusedOutputStageBytesTest, SameBytesAsHandWrittenKernel) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const UnitCase& c = GetParam();
  std::mt19937 rng(23);
  const int64_t n = 2;
  const int zp = c.type == ir::DataType::kUint8 ? 131 : -3;
  testing::QdqGraph b;
  ir::Value* x = b.Input("x", {n, c.cin, c.size, c.size}, c.type, 0.5f, zp);
  std::uniform_int_distribution<int> w64(-64, 64);
  std::vector<int8_t> w(static_cast<size_t>(c.cout * (c.cin / c.group) * c.kernel * c.kernel));
  for (int8_t& e : w) e = static_cast<int8_t>(w64(rng));
  std::vector<float> w_scales, bias_scales;
  std::vector<int32_t> bias;
  std::uniform_int_distribution<int> b_dist(-3000, 3000);
  for (int64_t o = 0; o < c.cout; ++o) {
    if (o == 0 || !c.per_tensor_weights) {
      w_scales.push_back(std::ldexp(1.f, -6 - static_cast<int>(o % 4)));
      bias_scales.push_back(0.5f * w_scales.back());
    }
    bias.push_back(b_dist(rng));
  }
  std::vector<int64_t> out_dims;
  ir::Value* y = AddSquareConv(b, x, {n, c.cin, c.cout, c.size, c.kernel, c.stride, c.group}, w, w_scales, bias,
                               bias_scales, &out_dims);
  if (c.folded_clamp) y = b.QuantizeDequantize(y, c.type, 1.f, zp == 131 ? 9 : 3);
  if (c.activation == "Relu") y = b.Op("Relu", {y}, out_dims);
  if (c.activation == "Clip") y = b.Op("Clip", {y, b.FloatConst("lo", 0.f), b.FloatConst("hi", 6.f)}, out_dims);
  b.Output(y, c.type, c.folded_clamp ? 2.f : 1.f, c.zero_output_zero_point ? 0 : zp == 131 ? 5 : -7);

  ir::Tensor xt(c.type, {n, c.cin, c.size, c.size});
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& v : xt.mutable_values<uint8_t>()) v = static_cast<uint8_t>(byte(rng));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunInt8Values(b.graph(), false, {{"x", xt}}));
  const int64_t fused_before = FusedOutputStagePrimitives(), maps_before = FusedByteMapPrimitives();
  const int64_t clips_before = ConversionClipPrimitives();
  QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunInt8Values(b.graph(), true, {{"x", xt}}));
  EXPECT_GT(FusedOutputStagePrimitives(), fused_before) << "the stage did not run inside oneDNN";
  EXPECT_EQ(FusedByteMapPrimitives() > maps_before, c.folded_clamp) << "the folded clamp's byte map";
  // The clip plus the zero point spans the output type's whole range: no activation (any zero
  // point), or a Relu on uint8 with zero point 0 (on int8 a Relu's bound 0 is above -128; a
  // nonzero zero point puts it above 0). Not with a byte map.
  const bool whole_range =
      !c.folded_clamp && (c.activation.empty() || (c.activation == "Relu" && c.type == ir::DataType::kUint8 &&
                                                   c.zero_output_zero_point));
  EXPECT_EQ(ConversionClipPrimitives() > clips_before, whole_range) << "the conversion's clip and rounding";
  ASSERT_EQ(got.size(), want.size());
  ASSERT_TRUE(want.count("output:y"));
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(got.at(name).BitwiseEqual(t)) << name;
  }
}

using ir::DataType;
INSTANTIATE_TEST_SUITE_P(
    Units, FusedOutputStageBytesTest,
    ::testing::Values(UnitCase{"pointwise_u8", 40, 24, 9, 1, 1, 1, DataType::kUint8, ""},
                      UnitCase{"pointwise_s8_relu", 24, 40, 9, 1, 1, 1, DataType::kInt8, "Relu"},
                      UnitCase{"conv3x3_u8_clip", 16, 32, 10, 3, 1, 1, DataType::kUint8, "Clip"},
                      UnitCase{"conv3x3_s2_s8", 16, 20, 11, 3, 2, 1, DataType::kInt8, ""},
                      UnitCase{"depthwise_u8_clip", 48, 48, 12, 3, 1, 48, DataType::kUint8, "Clip"},
                      UnitCase{"depthwise_s2_s8_relu", 32, 32, 13, 3, 2, 32, DataType::kInt8, "Relu"},
                      UnitCase{"pointwise_u8_folded_relu", 40, 24, 9, 1, 1, 1, DataType::kUint8, "Relu", true},
                      UnitCase{"depthwise_s8_folded_clip", 48, 48, 12, 3, 1, 48, DataType::kInt8, "Clip", true},
                      UnitCase{"pointwise_u8_per_tensor", 40, 24, 9, 1, 1, 1, DataType::kUint8, "Relu", false, true},
                      UnitCase{"conv3x3_s8_per_tensor_folded", 16, 32, 10, 3, 1, 1, DataType::kInt8, "Clip", true,
                               true},
                      UnitCase{"pointwise_u8_zp0", 40, 24, 9, 1, 1, 1, DataType::kUint8, "", false, false, true},
                      UnitCase{"pointwise_s8_zp0", 24, 40, 9, 1, 1, 1, DataType::kInt8, "", false, false, true},
                      UnitCase{"conv3x3_u8_relu_zp0", 16, 32, 10, 3, 1, 1, DataType::kUint8, "Relu", false, false,
                               true},
                      UnitCase{"depthwise_s8_relu_zp0", 32, 32, 13, 3, 1, 32, DataType::kInt8, "Relu", false, false,
                               true},
                      UnitCase{"conv3x3_u8_clip_zp0", 16, 32, 10, 3, 1, 1, DataType::kUint8, "Clip", false, false,
                               true},
                      UnitCase{"depthwise_u8_zp0", 48, 48, 12, 3, 1, 48, DataType::kUint8, "", false, false, true}),
    [](const ::testing::TestParamInfo<UnitCase>& info) { return info.param.name; });

// The integer-head form (quant/integer_heads.h: the default of //tools:quantize with uint8
// activations), whose units dequantize and then divide by the output scale as QuantizeLinear
// does: on both samples at level full, every INT8 / UINT8 value oneDNN's units give with the
// stage fused equals the hand-written kernels' at the scalar cap.
TEST(FusedOutputStageSampleTest, IntegerHeadUnitsGiveTheScalarKernelsBytes) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  for (const std::string name : {"mobilenetv2_small", "resnet_small"}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/" + name));
    calib::ThresholdOptions threshold;
    threshold.method = calib::CalibrationMethod::kEntropy;
    quant::ConvertOptions convert;
    convert.activation_type = quant::ActivationType::kUint8;
    convert.integer_heads = true;
    QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample q,
                               testing::QuantizeSampleWith(name, fusion::FusionLevel::kFull, threshold, convert));
    ASSERT_GT(q.stats.integer_heads, 0) << name;
    std::map<std::string, ir::Tensor> want;
    {
      testing::IsaCapGuard guard;
      SetIsaCap(Isa::kScalar);
      QFUSE_ASSERT_OK_AND_ASSIGN(want, RunInt8Values(*q.model.graph, false, tc.inputs));
    }
    const int64_t fused_before = FusedOutputStagePrimitives(), clips_before = ConversionClipPrimitives();
    QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunInt8Values(*q.model.graph, true, tc.inputs));
    // Below VNNI these 8-bit weights go through the split source, which does not fuse.
    const ir::Tensor* weights = AnyConvWeights(*q.model.graph);
    ASSERT_NE(weights, nullptr) << name;
    if (OneDnnInt8IsExact(ir::DataType::kUint8, *weights)) {
      EXPECT_GT(FusedOutputStagePrimitives(), fused_before) << name;
      // The units without an activation bound inside the grid divide and leave the clip (and,
      // at zero point 0, the rounding) to the conversion.
      EXPECT_GT(ConversionClipPrimitives(), clips_before) << name;
    }
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [value, t] : want) EXPECT_TRUE(got.at(value).BitwiseEqual(t)) << name << " " << value;
  }
}

}  // namespace
}  // namespace qfuse::runtime::onednn
