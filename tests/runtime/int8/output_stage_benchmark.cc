// Speed of the unit output stage (OutputStage::QuantizePixels) per ISA level, plain (one
// multiplier) and integer-head (a division by s_y) forms, with and without a residual, on
// one band of channels-last accumulators that stays in L2 (96 channels x 512 pixels); and the
// float epilogue of a HardSwish unit in one pass or three.
// Run: bazel run -c opt //tests/runtime/int8:output_stage_benchmark
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "runtime/int8/output_stage.h"

namespace qfuse::runtime::int8 {
namespace {

constexpr int64_t kChannels = 96, kPixels = 512;

// args: ISA level (0 scalar, 1 AVX2, 2 AVX-512), dequantize_then_quantize, residual.
void BM_QuantizePixels(benchmark::State& state) {
  const auto isa = static_cast<RequantizeIsa>(state.range(0));
  if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) {
    state.SkipWithError("ISA not available here");
    return;
  }
  SetRequantizeIsa(isa);
  OutputStageSpec spec;
  spec.output_type = ir::DataType::kUint8;
  spec.output_scale = 0.047f;
  spec.output_zero_point = 0;
  spec.act_min = 0.f;
  spec.act_max = 6.f;
  spec.a.input_scale = 0.021f;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> w(0.001f, 0.01f);
  for (int64_t c = 0; c < kChannels; ++c) spec.a.weight_scales.push_back(w(rng));
  spec.dequantize_then_quantize = state.range(1) != 0;
  spec.has_b = state.range(2) != 0;
  spec.b.input_scale = 0.05f;
  absl::StatusOr<OutputStage> stage = OutputStage::Create(spec);
  if (!stage.ok()) {
    state.SkipWithError("bad spec");
    return;
  }
  std::normal_distribution<float> acc(0.f, 3000.f);
  std::vector<int32_t> a(kChannels * kPixels), bias(kChannels);
  for (int32_t& v : a) v = static_cast<int32_t>(acc(rng));
  for (int32_t& v : bias) v = static_cast<int32_t>(acc(rng) / 10);
  std::vector<uint8_t> b(a.size()), out(a.size());
  for (uint8_t& v : b) v = static_cast<uint8_t>(rng());
  for (auto _ : state) {
    stage->QuantizePixels(a.data(), bias.data(), spec.has_b ? b.data() : nullptr, 128, kChannels, kPixels, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kChannels * kPixels);
  SetRequantizeIsa(MaxRequantizeIsa());
}
BENCHMARK(BM_QuantizePixels)->ArgsProduct({{0, 1, 2}, {0, 1}, {0, 1}});

// The float epilogue of a HardSwish unit (uint8 output): args: one pass (activated_pixels.h)
// or three (DequantizePixels, ir::ApplyUnitActivation, QuantizeRealRow), channels per pixel.
void BM_HardSwishEpilogue(benchmark::State& state) {
  const bool one_pass = state.range(0) != 0;
  const int64_t channels = state.range(1), pixels = kChannels * kPixels / channels;
  OutputStageSpec spec;
  spec.output_type = ir::DataType::kUint8;
  spec.output_scale = 0.031f;
  spec.output_zero_point = 12;
  spec.a.input_scale = 0.021f;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> w(0.001f, 0.01f);
  for (int64_t c = 0; c < channels; ++c) spec.a.weight_scales.push_back(w(rng));
  absl::StatusOr<OutputStage> stage = OutputStage::Create(spec);
  if (!stage.ok()) {
    state.SkipWithError("bad spec");
    return;
  }
  ir::UnitSpec hardswish;
  hardswish.activation = ir::UnitActivation::kHardSwish;
  std::normal_distribution<float> acc(0.f, 3000.f);
  std::vector<int32_t> a(channels * pixels), bias(channels);
  for (int32_t& v : a) v = static_cast<int32_t>(acc(rng));
  for (int32_t& v : bias) v = static_cast<int32_t>(acc(rng) / 10);
  std::vector<uint8_t> out(a.size());
  std::vector<float> real(a.size());
  const uint8_t* none = nullptr;
  if (one_pass &&
      !stage->ActivatePixels(hardswish, a.data(), bias.data(), none, false, 0, channels, pixels, out.data(), false)) {
    state.SkipWithError("no one-pass form here (AVX-512 needed)");
    return;
  }
  for (auto _ : state) {
    if (one_pass) {
      stage->ActivatePixels(hardswish, a.data(), bias.data(), none, false, 0, channels, pixels, out.data(), false);
    } else {
      stage->DequantizePixels(a.data(), bias.data(), none, 0, channels, pixels, real.data());
      ir::ApplyUnitActivation(hardswish, absl::MakeSpan(real), true);
      stage->QuantizeRealRow(real.data(), static_cast<int64_t>(real.size()), out.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * channels * pixels);
}
BENCHMARK(BM_HardSwishEpilogue)->ArgsProduct({{0, 1}, {16, 96}});

}  // namespace
}  // namespace qfuse::runtime::int8

BENCHMARK_MAIN();
