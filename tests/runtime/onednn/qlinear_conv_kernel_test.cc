// The channels-last integer conv units (accumulators from oneDNN or from qfuse's channels-last
// tiles) against the hand-written integer kernels at the scalar ISA cap on the sample models'
// int8 graphs (int8 and uint8 activations, 8-bit and 7-bit weights, fusion levels bn and full,
// both requantization modes): every INT8/UINT8 tensor and every output must be the same bytes.
// Runs under each cap the CPU supports (AVX-512 VNNI, AVX2) and with each engine: oneDNN
// directly where its int8 convolution is exact (at VNNI; under the AVX2 cap with 7-bit
// weights), through the split source (source_split.h) under the AVX2 cap with 8-bit weights,
// the tiles everywhere. oneDNN's units run with the output stage fused into its convolution
// (fused_output_stage.h) and without. The default engine choice (kAuto) times oneDNN against
// the tiles per unit on its first calls: those runs check both engines and the chosen one.
#include "runtime/onednn/qlinear_conv_kernel.h"

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/engine_tuner.h"
#include "runtime/executor.h"
#include "runtime/onednn/fused_output_stage.h"
#include "runtime/onednn/int8_conv_engine.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/runtime/onednn/int8_values.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

// Activation type and 7-bit weights. Below VNNI oneDNN runs exactly only with 7-bit weights:
// uint8 sources directly, int8 ones flipped to uint8 by the kernel.
struct Numerics {
  quant::ActivationType activations;
  bool reduce_range;
};
using Param = std::tuple<std::string, fusion::FusionLevel, Numerics>;
class OneDnnIntegerUnitTest : public ::testing::TestWithParam<Param> {};

TEST_P(OneDnnIntegerUnitTest, SameBytesAsScalarHandWrittenKernels) {
  testing::IsaCapGuard guard;
  const auto& [name, level, numerics_choice] = GetParam();
  const auto [activations, reduce_range] = numerics_choice;
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/" + name));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, testing::QuantizeSample(name, level, activations, reduce_range));
  const ir::DataType x_type = activations == quant::ActivationType::kUint8 ? ir::DataType::kUint8 : ir::DataType::kInt8;
  const ir::Tensor* any_weights = nullptr;
  for (const ir::Node* n : model.graph->nodes()) {
    const ir::Value* w = n->op_type() == "DequantizeLinear" ? n->input(0) : nullptr;
    if (any_weights == nullptr && w != nullptr && w->is_constant() && w->initializer()->rank() == 4) {
      any_weights = w->initializer();
    }
  }
  ASSERT_NE(any_weights, nullptr);
  // The oracle: the hand-written kernels with the scalar GEMM and output stage.
  const Isa start_cap = MaxIsa();
  std::map<numerics::RequantizeMode, std::map<std::string, ir::Tensor>> want;
  SetIsaCap(Isa::kScalar);
  for (numerics::RequantizeMode mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(want[mode], RunInt8Values(*model.graph, false, tc.inputs, mode));
    ASSERT_GT(want[mode].size(), 10u);
  }
  int checked = 0;
  // oneDNN's own ISA is fixed once its first kernel is made, so a lower cap set here limits
  // qfuse's choices but not oneDNN's instructions: the vpmaddubsw path itself is exercised
  // when the whole test runs under QFUSE_MAX_ISA=avx2 (tools/test.sh does).
  for (Isa cap : {Isa::kAvx512Vnni, Isa::kAvx2Vnni, Isa::kAvx2}) {
    if (cap > start_cap) continue;
    SetIsaCap(cap);
    const bool exact = OneDnnInt8IsExact(x_type, *any_weights);
    // The rule itself: with VNNI (oneDNN's AVX-512 VNNI, or its AVX-VNNI where the cap allows
    // it) any weights, at AVX2 only 7-bit ones.
    EXPECT_EQ(exact, UseOneDnn() && (OneDnnHasVnni() || reduce_range)) << IsaName(cap);
    if (cap == Isa::kAvx512Vnni) EXPECT_TRUE(!UseOneDnn() || OneDnnHasVnni());
    if (cap == Isa::kAvx2) EXPECT_FALSE(OneDnnHasVnni());
    if (!UseOneDnn()) continue;
    for (Int8ConvEngine engine : {Int8ConvEngine::kAuto, Int8ConvEngine::kOneDnn, Int8ConvEngine::kTiles}) {
      // Below VNNI with 8-bit weights oneDNN runs through the split source.
      if (engine == Int8ConvEngine::kOneDnn && !exact && !OneDnnSplitSourceIsExact(x_type)) continue;
      SetInt8ConvEngine(engine);
      for (numerics::RequantizeMode mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
        // Pointwise units in bands: the default, bands of 16 pixels (many bands, an uneven
        // last one, outliers on both sides of band edges) and none (whole images); the output
        // stage inside oneDNN where it qualifies (the default) and always qfuse's own.
        const int64_t default_band = int64_t{256} << 10;
        for (const auto& [band_bytes, fuse] : std::vector<std::pair<int64_t, bool>>{
                 {default_band, true}, {1, true}, {0, true}, {default_band, false}, {1, false}}) {
          if ((band_bytes != default_band || !fuse) &&
              (engine != Int8ConvEngine::kOneDnn || mode != numerics::RequantizeMode::kOnnx)) {
            continue;
          }
          SetPointwiseBandBytes(band_bytes);
          SetOutputStageFusion(fuse);
          const int64_t fused_before = FusedOutputStagePrimitives();
          // kAuto: enough runs for every unit to time both of its engines and then run the
          // chosen one (engine_tuner.h); every run must give the same bytes.
          const int runs = engine == Int8ConvEngine::kAuto ? EngineTuner::CallsToChoose(2) + 1 : 1;
          const int64_t choices_before = EngineTuner::ChoicesMade();
          QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunInt8Values(*model.graph, true, tc.inputs, mode, runs));
          // Every sample has units that both engines run (all of them at VNNI; all but the
          // depthwise ones under the AVX2 cap), and each made its choice.
          if (engine == Int8ConvEngine::kAuto) EXPECT_GT(EngineTuner::ChoicesMade(), choices_before) << name;
          SetPointwiseBandBytes(default_band);
          SetOutputStageFusion(true);
          // With VNNI (AVX-512's or AVX-VNNI) oneDNN's accumulators are exact for every unit,
          // so the one-term kOnnx units of both samples run the fused stage.
          if (OneDnnHasVnni() && engine == Int8ConvEngine::kOneDnn && mode == numerics::RequantizeMode::kOnnx) {
            EXPECT_EQ(FusedOutputStagePrimitives() > fused_before, fuse) << name;
          }
          ASSERT_EQ(got.size(), want[mode].size());
          for (const auto& [value, w] : want[mode]) {
            EXPECT_TRUE(got.at(value).BitwiseEqual(w))
                << name << " " << value << " at cap " << IsaName(cap) << " engine " << static_cast<int>(engine)
                << " pointwise band bytes " << band_bytes << (fuse ? " fused" : "")
                << " differs from the scalar hand-written kernels";
          }
          ++checked;
        }
      }
    }
    SetInt8ConvEngine(Int8ConvEngine::kAuto);
  }
  if (checked == 0) GTEST_SKIP() << "no AVX2 on this CPU";
}

INSTANTIATE_TEST_SUITE_P(Samples, OneDnnIntegerUnitTest,
                         ::testing::Combine(::testing::Values("resnet_small", "mobilenetv2_small"),
                                            ::testing::Values(fusion::FusionLevel::kBn, fusion::FusionLevel::kFull),
                                            ::testing::Values(Numerics{quant::ActivationType::kInt8, false},
                                                              Numerics{quant::ActivationType::kUint8, false},
                                                              Numerics{quant::ActivationType::kInt8, true},
                                                              Numerics{quant::ActivationType::kUint8, true})));

}  // namespace
}  // namespace qfuse::runtime::onednn
