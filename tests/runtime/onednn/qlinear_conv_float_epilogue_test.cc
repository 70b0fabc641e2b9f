// Conv units with a non-linear activation (HardSwish, HardSigmoid, Sigmoid, SiLU, LeakyRelu:
// output_stage.h's float epilogue) on the channels-last kernel (qlinear_conv_kernel.h), with
// their accumulators from oneDNN (directly at VNNI, through the split source below it) or
// from the tiles: every INT8 / UINT8 value and the output must be the bytes of the
// hand-written integer kernel at the scalar cap. Sources dense in values outside the split
// window and sparse in them, full-range 8-bit weights, residuals, pointwise / 3x3 / strided /
// depthwise shapes.
#include <cmath>
#include <cstdint>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/onednn/int8_conv_engine.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/onednn/qlinear_conv_kernel.h"
#include "tests/runtime/onednn/int8_values.h"
#include "tests/runtime/onednn/square_conv.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

struct EpilogueCase {
  std::string name;
  int64_t cin, cout, size, kernel, stride, group;
  ir::DataType type;
  std::string activation;  // HardSwish, HardSigmoid, Sigmoid, SiLU or LeakyRelu
  bool residual = false;
  bool sparse_outliers = false;     // sources mostly inside the split window (else uniform bytes)
  bool per_tensor_weights = false;  // one weight scale
};
void PrintTo(const EpilogueCase& c, std::ostream* os) { *os << c.name; }

// The activation of `v` as float ops (SiLU as Sigmoid then Mul, as exporters write it).
ir::Value* Activate(testing::QdqGraph& b, const std::string& activation, ir::Value* v,
                    const std::vector<int64_t>& dims) {
  ir::AttributeMap attrs;
  if (activation == "SiLU") return b.Op("Mul", {v, b.Op("Sigmoid", {v}, dims)}, dims);
  if (activation == "HardSigmoid") {
    attrs.Set("alpha", 0.2f);
    attrs.Set("beta", 0.5f);
  }
  if (activation == "LeakyRelu") attrs.Set("alpha", 0.1f);
  return b.Op(activation, {v}, dims, attrs);
}

// Bytes of a source of `type` with zero point `zp`: uniform over all 256 values, or (sparse)
// within the split window around the zero point with 1 value in 64 anywhere.
ir::Tensor Source(ir::DataType type, const std::vector<int64_t>& dims, bool sparse, std::mt19937& rng) {
  ir::Tensor t(type, dims);
  std::uniform_int_distribution<int> byte(0, 255), window(0, 127), pick(0, 63);
  for (uint8_t& v : t.mutable_values<uint8_t>()) {
    if (!sparse || pick(rng) == 0) {
      v = static_cast<uint8_t>(byte(rng));
    } else {
      // uint8 with zero point 0: [0, 127]; int8 with zero point 0: [-64, 63].
      const int w = window(rng);
      v = static_cast<uint8_t>(type == ir::DataType::kUint8 ? w : w - 64);
    }
  }
  return t;
}

class FloatEpilogueTest : public ::testing::TestWithParam<EpilogueCase> {};

TEST_P(FloatEpilogueTest, SameBytesAsScalarHandWrittenKernel) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const EpilogueCase& c = GetParam();
  std::mt19937 rng(41);
  const int64_t n = 2;
  const float s_x = 0.03f;
  testing::QdqGraph b;
  ir::Value* x = b.Input("x", {n, c.cin, c.size, c.size}, c.type, s_x, 0);
  const int64_t k = (c.cin / c.group) * c.kernel * c.kernel;
  std::uniform_int_distribution<int> w8(-127, 127);
  std::vector<int8_t> w(static_cast<size_t>(c.cout * k));
  for (int8_t& e : w) e = static_cast<int8_t>(w8(rng));
  w[0] = -128;  // the one weight below -127
  // Weight scales that spread the dequantized sums over about [-8, 8], the activations' bends.
  std::vector<float> w_scales, bias_scales;
  std::vector<int32_t> bias;
  std::uniform_int_distribution<int> b_dist(-20000, 20000);
  for (int64_t o = 0; o < c.cout; ++o) {
    if (o == 0 || !c.per_tensor_weights) {
      w_scales.push_back(8.f / (s_x * 128.f * 73.f * std::sqrt(static_cast<float>(k))) * (1.f + 0.1f * (o % 5)));
      bias_scales.push_back(s_x * w_scales.back());
    }
    bias.push_back(b_dist(rng));
  }
  std::vector<int64_t> out_dims;
  ir::Value* y = AddSquareConv(b, x, {n, c.cin, c.cout, c.size, c.kernel, c.stride, c.group}, w, w_scales, bias,
                               bias_scales, &out_dims);
  std::vector<NamedTensor> inputs = {{"x", Source(c.type, {n, c.cin, c.size, c.size}, c.sparse_outliers, rng)}};
  if (c.residual) {
    y = b.Op("Add", {y, b.Input("r", out_dims, c.type, 0.05f, c.type == ir::DataType::kUint8 ? 120 : -5)}, out_dims);
    inputs.push_back({"r", Source(c.type, out_dims, false, rng)});
  }
  y = Activate(b, c.activation, y, out_dims);
  b.Output(y, c.type, 0.04f, c.type == ir::DataType::kUint8 ? 30 : -3);

  std::map<std::string, ir::Tensor> want;
  {
    testing::IsaCapGuard guard;
    SetIsaCap(Isa::kScalar);
    QFUSE_ASSERT_OK_AND_ASSIGN(want, RunInt8Values(b.graph(), false, inputs));
  }
  ASSERT_TRUE(want.count("output:y"));
  // Every engine this cap allows: oneDNN (directly or through the split source) and the tiles.
  for (Int8ConvEngine engine : {Int8ConvEngine::kAuto, Int8ConvEngine::kOneDnn, Int8ConvEngine::kTiles}) {
    SetInt8ConvEngine(engine);
    const int64_t units_before = ChannelsLastFloatEpilogueUnits();
    absl::StatusOr<std::map<std::string, ir::Tensor>> got = RunInt8Values(b.graph(), true, inputs);
    SetInt8ConvEngine(Int8ConvEngine::kAuto);
    QFUSE_ASSERT_OK(got.status());
    EXPECT_EQ(ChannelsLastFloatEpilogueUnits(), units_before + 1) << "the unit did not run on the channels-last kernel";
    ASSERT_EQ(got->size(), want.size());
    for (const auto& [name, t] : want) {
      ASSERT_TRUE(got->count(name)) << name;
      EXPECT_TRUE(got->at(name).BitwiseEqual(t)) << name << " engine " << static_cast<int>(engine);
    }
  }
}

using ir::DataType;
INSTANTIATE_TEST_SUITE_P(
    Units, FloatEpilogueTest,
    ::testing::Values(
        EpilogueCase{"pointwise_u8_hardswish", 40, 24, 9, 1, 1, 1, DataType::kUint8, "HardSwish"},
        EpilogueCase{"pointwise_s8_silu_sparse", 24, 40, 9, 1, 1, 1, DataType::kInt8, "SiLU", false, true},
        EpilogueCase{"pointwise_u8_sigmoid_residual", 32, 32, 7, 1, 1, 1, DataType::kUint8, "Sigmoid", true},
        EpilogueCase{"conv3x3_u8_hardsigmoid", 16, 32, 10, 3, 1, 1, DataType::kUint8, "HardSigmoid"},
        EpilogueCase{"conv3x3_s2_s8_leakyrelu", 16, 20, 11, 3, 2, 1, DataType::kInt8, "LeakyRelu"},
        EpilogueCase{"conv3x3_s8_hardswish_residual_sparse", 16, 16, 8, 3, 1, 1, DataType::kInt8, "HardSwish", true,
                     true},
        EpilogueCase{"depthwise_u8_silu_sparse", 48, 48, 12, 3, 1, 48, DataType::kUint8, "SiLU", false, true},
        EpilogueCase{"depthwise_s2_s8_hardswish", 32, 32, 13, 3, 2, 32, DataType::kInt8, "HardSwish"},
        EpilogueCase{"depthwise_u8_silu", 40, 40, 9, 3, 1, 40, DataType::kUint8, "SiLU"},
        EpilogueCase{"pointwise_u8_hardswish_per_tensor_residual", 24, 20, 9, 1, 1, 1, DataType::kUint8, "HardSwish",
                     true, false, true}),
    [](const ::testing::TestParamInfo<EpilogueCase>& info) { return info.param.name; });

}  // namespace
}  // namespace qfuse::runtime::onednn
