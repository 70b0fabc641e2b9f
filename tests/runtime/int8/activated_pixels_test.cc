// The one-pass float epilogue (runtime/int8/activated_pixels.h, through
// OutputStage::ActivatePixels) against the scalar three-pass path it replaces: Dequantize per
// value, ir::ApplyUnitActivation one value at a time, numerics::QuantizeLinear. Every
// activation with a one-pass form, channel counts 1-33 (every tail), no / int8 / uint8
// residual, int8 / uint8 output, per-channel and per-tensor weight scales, and accumulators
// spread so the outputs cover the type's range and saturate at both ends. Skipped where
// AVX-512 is not allowed (then the one-pass path never runs).
#include "runtime/int8/activated_pixels.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "numerics/requantize.h"
#include "runtime/cpu_isa.h"
#include "runtime/int8/output_stage.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::int8 {
namespace {

struct Case {
  ir::UnitActivation activation;
  const char* name;
};

template <typename T, typename B>
void Check(const ir::UnitSpec& act, bool per_tensor, int64_t channels, bool residual, std::mt19937& rng) {
  constexpr bool kSignedOut = std::is_same_v<T, int8_t>;
  OutputStageSpec spec;
  spec.output_type = kSignedOut ? ir::DataType::kInt8 : ir::DataType::kUint8;
  spec.output_scale = 0.021f;
  spec.output_zero_point = kSignedOut ? -7 : 40;
  spec.a.input_scale = 0.017f;
  std::uniform_real_distribution<float> ws(0.001f, 0.004f);
  spec.a.weight_scales.clear();
  for (int64_t c = 0; c < (per_tensor ? 1 : channels); ++c) spec.a.weight_scales.push_back(ws(rng));
  spec.has_b = residual;
  spec.b.input_scale = 0.05f;
  QFUSE_ASSERT_OK_AND_ASSIGN(OutputStage stage, OutputStage::Create(spec));
  const int64_t pixels = 37, n = pixels * channels;
  std::uniform_int_distribution<int32_t> acc(-150000, 150000), bias_d(-3000, 3000), byte(0, 255);
  std::vector<int32_t> a(n), bias(channels);
  for (int32_t& v : a) v = acc(rng);
  for (int32_t& v : bias) v = bias_d(rng);
  std::vector<B> b(n);
  for (B& v : b) v = static_cast<B>(byte(rng));
  const int32_t b_zp = std::is_same_v<B, int8_t> ? 3 : 120;
  const B* res = residual ? b.data() : nullptr;
  std::vector<T> got(n), want(n);
  if (!stage.ActivatePixels(act, a.data(), bias.data(), reinterpret_cast<const uint8_t*>(res), std::is_signed_v<B>,
                            b_zp, channels, pixels, reinterpret_cast<uint8_t*>(got.data()), kSignedOut)) {
    GTEST_SKIP() << "no one-pass epilogue here (AVX-512 not allowed)";
  }
  for (int64_t p = 0; p < pixels; ++p) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = p * channels + c;
      const int32_t sum = a[i] + bias[c];
      float v = residual ? stage.Dequantize(sum, static_cast<int32_t>(b[i]) - b_zp, c) : stage.Dequantize(sum, c);
      v = ir::ApplyUnitActivation(act, v);
      want[i] = numerics::QuantizeLinear<T>(v, spec.output_scale, spec.output_zero_point);
    }
  }
  int lowest = 0, highest = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(int{got[i]}, int{want[i]}) << "value " << i << " of " << channels << " channels";
    lowest += want[i] == std::numeric_limits<T>::lowest();
    highest += want[i] == std::numeric_limits<T>::max();
  }
  if (channels == 33 && act.activation == ir::UnitActivation::kLeakyRelu) {
    EXPECT_GT(lowest, 0) << "the data should saturate at the low end";
    EXPECT_GT(highest, 0) << "the data should saturate at the high end";
  }
}

class ActivatedPixelsTest : public ::testing::TestWithParam<Case> {};

TEST_P(ActivatedPixelsTest, SameBytesAsTheScalarThreePasses) {
  ir::UnitSpec act;
  act.activation = GetParam().activation;
  act.alpha = act.activation == ir::UnitActivation::kLeakyRelu ? 0.5f : 0.2f;
  act.beta = 0.5f;
  std::mt19937 rng(31);
  for (int64_t channels = 1; channels <= 33; ++channels) {
    for (bool per_tensor : {false, true}) {
      Check<uint8_t, uint8_t>(act, per_tensor, channels, false, rng);
      Check<int8_t, int8_t>(act, per_tensor, channels, true, rng);
      Check<uint8_t, int8_t>(act, per_tensor, channels, true, rng);
      Check<int8_t, uint8_t>(act, per_tensor, channels, true, rng);
      if (HasFatalFailure() || IsSkipped()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Activations, ActivatedPixelsTest,
                         ::testing::Values(Case{ir::UnitActivation::kHardSwish, "HardSwish"},
                                           Case{ir::UnitActivation::kHardSigmoid, "HardSigmoid"},
                                           Case{ir::UnitActivation::kLeakyRelu, "LeakyRelu"},
                                           Case{ir::UnitActivation::kSigmoid, "Sigmoid"},
                                           Case{ir::UnitActivation::kSilu, "SiLU"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// Activations without a one-pass form are declined, and nothing is written.
TEST(ActivatedPixelsDeclineTest, ClampActivationsAreNotTaken) {
  ActivatedPixelsArgs args;
  args.activation.activation = ir::UnitActivation::kRelu6;
  EXPECT_FALSE(ActivatePixelsInOnePass(args));
}

}  // namespace
}  // namespace qfuse::runtime::int8
