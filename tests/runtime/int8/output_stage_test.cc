// The vectorised OutputStage::QuantizeRow (AVX2 / AVX-512, chosen at run time) must give
// the same bytes as the scalar code, for one and two terms, both modes, int8 / uint8
// outputs and residuals, on random data including exact ties and saturation.
#include "runtime/int8/output_stage.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/requantize_isa_guard.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::int8 {
namespace {

using IsaGuard = testing::RequantizeIsaGuard;

struct Case {
  numerics::RequantizeMode mode;
  ir::DataType out_type;
  bool two_term;
  bool residual_signed;
  bool per_channel;
  bool dequantize = false;  // dequantize_then_quantize (kOnnx)
};

template <typename T, typename B>
void CheckCase(const Case& cs, std::mt19937& rng, int* compared) {
  std::uniform_real_distribution<float> log_scale(-12.f, 2.f);
  std::uniform_int_distribution<int> zp_dist(std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max());
  std::uniform_int_distribution<int> act(0, 3);
  OutputStageSpec spec;
  spec.mode = cs.mode;
  spec.dequantize_then_quantize = cs.dequantize;
  spec.output_type = cs.out_type;
  spec.output_scale = std::exp2(log_scale(rng) / 4);
  spec.output_zero_point = zp_dist(rng);
  spec.a.input_scale = std::exp2(log_scale(rng) / 2);
  const int channels = cs.per_channel ? 37 : 1;  // 37: two AVX-512 groups and a tail
  spec.a.weight_scales.clear();
  for (int c = 0; c < channels; ++c) {
    // Powers of two make exact ties (x.5) common; other scales exercise general rounding.
    spec.a.weight_scales.push_back(c % 2 == 0 ? std::exp2(std::round(log_scale(rng))) : std::exp2(log_scale(rng)));
  }
  spec.has_b = cs.two_term;
  spec.b.input_scale = cs.two_term ? spec.output_scale * std::exp2(std::round(log_scale(rng) / 4)) : 1.f;
  switch (act(rng)) {
    case 1: spec.act_min = 0.f; break;
    case 2: spec.act_min = 0.f; spec.act_max = 6.f; break;
    default: break;
  }
  absl::StatusOr<OutputStage> stage = OutputStage::Create(spec);
  if (!stage.ok()) return;  // multiplier out of the kFixed range: nothing to compare
  ++*compared;
  const int64_t n = 40 + static_cast<int64_t>(rng() % 60);
  std::vector<int32_t> a(n);
  std::vector<B> b(n);
  std::uniform_int_distribution<int32_t> small(-2000, 2000), any(std::numeric_limits<int32_t>::min() / 2,
                                                                   std::numeric_limits<int32_t>::max() / 2);
  std::uniform_int_distribution<int> bd(std::numeric_limits<B>::lowest(), std::numeric_limits<B>::max());
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t kind = rng() % 8;
    a[i] = kind == 0 ? any(rng) : kind == 1 ? std::numeric_limits<int32_t>::max() / 2 - 1 : small(rng) * (kind == 2 ? 64 : 1);
    b[i] = static_cast<B>(bd(rng));
  }
  const int32_t bias = small(rng);
  const int32_t b_zp = bd(rng);
  // Channels-last: one pixel's channels (per tensor: n lanes of channel 0's scale), each
  // with its own bias, at every ISA level against the element-wise reference.
  const int64_t lanes = cs.per_channel ? channels : n;
  std::vector<int32_t> biases(lanes);
  for (int32_t& v : biases) v = small(rng);
  for (RequantizeIsa isa : {RequantizeIsa::kScalar, RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
    IsaGuard guard;
    SetRequantizeIsa(isa);
    std::vector<T> got(lanes);
    stage->QuantizeChannels(a.data(), biases.data(), cs.two_term ? b.data() : nullptr, b_zp, 0, lanes, got.data());
    for (int64_t i = 0; i < lanes; ++i) {
      const int64_t c = cs.per_channel ? i : 0;
      const int32_t ref = cs.two_term ? stage->Quantize(a[i] + biases[i], static_cast<int32_t>(b[i]) - b_zp, c)
                                      : stage->Quantize(a[i] + biases[i], c);
      ASSERT_EQ(static_cast<int>(static_cast<T>(ref)), static_cast<int>(got[i])) << "channels-last isa "
                                                                                 << static_cast<int>(isa) << " i " << i;
    }
  }
  // Whole pixels (per channel: one pixel of 37 channels, then the first 3 of a second one
  // would overrun a, so one pixel; per tensor: pixels of 11 lanes, masked tails at AVX-512,
  // 8 lanes and a scalar tail at AVX2).
  const int64_t pixel_lanes = cs.per_channel ? channels : 11;
  const int64_t pixels = cs.per_channel ? 1 : n / 11;
  for (RequantizeIsa isa : {RequantizeIsa::kScalar, RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
    IsaGuard guard;
    SetRequantizeIsa(isa);
    std::vector<T> got(pixel_lanes * pixels);
    stage->QuantizePixels(a.data(), biases.data(), cs.two_term ? b.data() : nullptr, b_zp, pixel_lanes, pixels,
                          got.data());
    for (int64_t i = 0; i < pixel_lanes * pixels; ++i) {
      const int64_t lane = i % pixel_lanes;
      const int64_t c = cs.per_channel ? lane : 0;
      const int32_t ref = cs.two_term ? stage->Quantize(a[i] + biases[lane], static_cast<int32_t>(b[i]) - b_zp, c)
                                      : stage->Quantize(a[i] + biases[lane], c);
      ASSERT_EQ(static_cast<int>(static_cast<T>(ref)), static_cast<int>(got[i])) << "pixels isa "
                                                                                 << static_cast<int>(isa) << " i " << i;
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    std::vector<T> scalar(n), vec(n);
    {
      IsaGuard guard;
      SetRequantizeIsa(RequantizeIsa::kScalar);
      stage->QuantizeRow(a.data(), 1, bias, cs.two_term ? b.data() : nullptr, b_zp, c, n, scalar.data());
    }
    // Reference: element by element.
    for (int64_t i = 0; i < n; ++i) {
      const int32_t ref = cs.two_term ? stage->Quantize(a[i] + bias, static_cast<int32_t>(b[i]) - b_zp, c)
                                      : stage->Quantize(a[i] + bias, c);
      ASSERT_EQ(static_cast<T>(ref), scalar[i]) << i;
    }
    for (RequantizeIsa isa : {RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
      if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
      IsaGuard guard;
      SetRequantizeIsa(isa);
      std::fill(vec.begin(), vec.end(), T{0});
      stage->QuantizeRow(a.data(), 1, bias, cs.two_term ? b.data() : nullptr, b_zp, c, n, vec.data());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(static_cast<int>(scalar[i]), static_cast<int>(vec[i]))
            << "isa " << static_cast<int>(isa) << " i " << i << " a " << a[i] << " b " << static_cast<int>(b[i]);
      }
    }
  }
}

TEST(OutputStageTest, VectorRowsMatchScalar) {
  std::mt19937 rng(1234);
  int compared = 0;
  for (int iter = 0; iter < 400; ++iter) {
    for (auto mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
      for (bool two : {false, true}) {
        for (bool pc : {false, true}) {
          for (bool dequantize : {false, true}) {
            if (dequantize && mode == numerics::RequantizeMode::kFixed) continue;  // kFixed ignores it
            Case cs{mode, ir::DataType::kInt8, two, true, pc, dequantize};
            CheckCase<int8_t, int8_t>(cs, rng, &compared);
            cs.out_type = ir::DataType::kUint8;
            cs.residual_signed = false;
            CheckCase<uint8_t, uint8_t>(cs, rng, &compared);
            CheckCase<uint8_t, int8_t>(cs, rng, &compared);
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 6000);  // of 14400 stages
}

// DequantizePixels (the float epilogue's first step on channels-last accumulators) at every
// ISA level against Dequantize element by element: per channel (37 channels: four AVX2 groups
// and a tail) and per tensor, one and two terms (int8 and uint8 residuals), with and without
// activation bounds, every float32 bit the same.
uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

template <typename B>
void CheckDequantizePixels(bool per_channel, bool two_term, bool bounded, std::mt19937& rng) {
  std::uniform_real_distribution<float> log_scale(-12.f, 2.f);
  OutputStageSpec spec;
  spec.output_type = ir::DataType::kUint8;
  spec.a.input_scale = std::exp2(log_scale(rng) / 2);
  const int64_t channels = 37, pixels = 3;
  spec.a.weight_scales.clear();
  for (int64_t c = 0; c < (per_channel ? channels : 1); ++c) spec.a.weight_scales.push_back(std::exp2(log_scale(rng)));
  spec.has_b = two_term;
  spec.b.input_scale = std::exp2(log_scale(rng) / 2);
  if (bounded) {
    spec.act_min = -0.5f;
    spec.act_max = 6.f;
  }
  QFUSE_ASSERT_OK_AND_ASSIGN(OutputStage stage, OutputStage::Create(spec));
  std::uniform_int_distribution<int32_t> acc(-3000000, 3000000);
  std::uniform_int_distribution<int> bd(std::numeric_limits<B>::lowest(), std::numeric_limits<B>::max());
  std::vector<int32_t> a(channels * pixels), bias(channels);
  std::vector<B> b(channels * pixels);
  for (int32_t& v : a) v = acc(rng);
  for (int32_t& v : bias) v = acc(rng) / 16;
  for (B& v : b) v = static_cast<B>(bd(rng));
  const int32_t b_zp = bd(rng);
  for (RequantizeIsa isa : {RequantizeIsa::kScalar, RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
    IsaGuard guard;
    SetRequantizeIsa(isa);
    for (const int32_t* with_bias : {static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(bias.data())}) {
      std::vector<float> got(a.size());
      stage.DequantizePixels(a.data(), with_bias, two_term ? b.data() : nullptr, b_zp, channels, pixels, got.data());
      for (int64_t i = 0; i < channels * pixels; ++i) {
        const int64_t j = i % channels;
        const int32_t sum = a[i] + (with_bias == nullptr ? 0 : bias[j]);
        const float want = two_term ? stage.Dequantize(sum, static_cast<int32_t>(b[i]) - b_zp, j) : stage.Dequantize(sum, j);
        ASSERT_EQ(Bits(want), Bits(got[i]))
            << "isa " << static_cast<int>(isa) << " i " << i << (with_bias == nullptr ? "" : " with bias");
      }
    }
  }
}

TEST(OutputStageTest, DequantizedPixelsMatchDequantize) {
  std::mt19937 rng(77);
  for (int iter = 0; iter < 50; ++iter) {
    for (bool per_channel : {false, true}) {
      for (bool bounded : {false, true}) {
        CheckDequantizePixels<uint8_t>(per_channel, false, bounded, rng);
        CheckDequantizePixels<uint8_t>(per_channel, true, bounded, rng);
        CheckDequantizePixels<int8_t>(per_channel, true, bounded, rng);
      }
    }
  }
}

// The integer-head form (quant/integer_heads.h) as onnxruntime runs it op by op, computed by
// hand in float32 for s_x = 0.05, s_w = 0.02, s_r = 0.1, s_y = 0.3, UINT8 output zero point 128:
//   d_a = fl(0.05 * 0.02) = 0.001, m_a = fl(d_a / 0.3) = 0.0033333334, m_b = fl(0.1 / 0.3) = 0.3333333
//   a = -2250:        fl(-2250 * 0.001) / 0.3 = -2.25 / 0.3 = -7.4999995 -> -7 -> 121
//                     (one multiplier: -2250 * m_a = -7.5, a tie -> -8 -> 120)
//   a = -1450, b = 7: fl(fl(-1.45) + fl(0.7)) / 0.3 = -2.5 (a tie) -> -2 -> 126
//                     (multipliers: fl(-4.8333335 + 2.3333333) = -2.5000002 -> -3 -> 125)
TEST(OutputStageTest, DequantizeThenQuantizeRoundsAsTheIntegerHeadForm) {
  for (bool dequantize : {false, true}) {
    OutputStageSpec spec;
    spec.output_type = ir::DataType::kUint8;
    spec.output_scale = 0.3f;
    spec.output_zero_point = 128;
    spec.a.input_scale = 0.05f;
    spec.a.weight_scales = {0.02f};
    spec.has_b = true;
    spec.b.input_scale = 0.1f;
    spec.dequantize_then_quantize = dequantize;
    absl::StatusOr<OutputStage> stage = OutputStage::Create(spec);
    ASSERT_TRUE(stage.ok());
    // 19 lanes: a whole AVX-512 group, an AVX2 group and a scalar tail all see both cases.
    std::vector<int32_t> a(19, -2250);
    std::vector<uint8_t> b(19, 128);  // b - zp = 0
    for (size_t i = 1; i < a.size(); i += 2) {
      a[i] = -1450;
      b[i] = 135;  // b - zp = 7
    }
    for (RequantizeIsa isa : {RequantizeIsa::kScalar, RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
      if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
      IsaGuard guard;
      SetRequantizeIsa(isa);
      std::vector<uint8_t> row(a.size()), pixels(a.size());
      stage->QuantizeRow(a.data(), 1, 0, b.data(), 128, 0, static_cast<int64_t>(a.size()), row.data());
      stage->QuantizePixels(a.data(), static_cast<const int32_t*>(nullptr), b.data(), 128, 1,
                            static_cast<int64_t>(a.size()), pixels.data());
      for (size_t i = 0; i < a.size(); ++i) {
        const int expected = i % 2 == 0 ? (dequantize ? 121 : 120) : (dequantize ? 126 : 125);
        EXPECT_EQ(row[i], expected) << "row isa " << static_cast<int>(isa) << " i " << i;
        EXPECT_EQ(pixels[i], expected) << "pixels isa " << static_cast<int>(isa) << " i " << i;
      }
    }
  }
}

// The integer-head form divides by s_y, as onnxruntime's QuantizeLinear does. Multiplying by
// 1 / s_y instead rounds some accumulators to the other integer; found here by scanning, they
// must give the scalar division's bytes at every ISA (a vector path that traded the division
// for the product would fail here; see output_stage_benchmark.cc for why none does).
TEST(OutputStageTest, DivisionBySyRoundsAsADivisionWhereAProductWouldNot) {
  std::mt19937 rng(99);
  // Accumulator steps of 2^-18 .. 2^-10 of s_y, as real units have: many near-ties.
  std::uniform_real_distribution<float> log_x(-8.f, -4.f), log_w(-10.f, -6.f), log_y(-3.f, 0.f);
  int product_differs = 0;
  for (int trial = 0; trial < 40; ++trial) {
    OutputStageSpec spec;
    spec.output_type = ir::DataType::kUint8;
    spec.output_zero_point = 128;
    spec.output_scale = std::exp2(log_y(rng));
    spec.a.input_scale = std::exp2(log_x(rng));
    spec.a.weight_scales = {std::exp2(log_w(rng))};
    spec.dequantize_then_quantize = true;
    absl::StatusOr<OutputStage> stage = OutputStage::Create(spec);
    ASSERT_TRUE(stage.ok());
    const float d_a = spec.a.input_scale * spec.a.weight_scales[0], s_y = spec.output_scale;
    const float inv = 1.f / s_y;
    // Accumulators whose quotient stays within +-120 (no saturation hides a difference).
    const int64_t reach = static_cast<int64_t>(120.0 * s_y / d_a);
    std::vector<int32_t> a;
    for (int64_t v = -std::min<int64_t>(reach, 1 << 22); v <= std::min<int64_t>(reach, 1 << 22); ++v) {
      const float f = static_cast<float>(v) * d_a;
      if (std::nearbyint(f / s_y) != std::nearbyint(f * inv)) a.push_back(static_cast<int32_t>(v));
    }
    product_differs += static_cast<int>(a.size());
    if (a.empty()) continue;
    while (a.size() % 8 != 3) a.push_back(a[a.size() % a.size()]);  // whole vectors and a tail
    const int64_t n = static_cast<int64_t>(a.size());
    for (RequantizeIsa isa : {RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
      if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
      IsaGuard guard;
      SetRequantizeIsa(isa);
      std::vector<uint8_t> row(n), pixels(n);
      stage->QuantizeRow(a.data(), 1, 0, static_cast<const uint8_t*>(nullptr), 0, 0, n, row.data());
      stage->QuantizePixels(a.data(), static_cast<const int32_t*>(nullptr), static_cast<const uint8_t*>(nullptr), 0, 1,
                            n, pixels.data());
      for (int64_t i = 0; i < n; ++i) {
        const int want = stage->Quantize(a[i], 0);
        ASSERT_EQ(static_cast<int>(row[i]), want) << "row isa " << static_cast<int>(isa) << " a " << a[i];
        ASSERT_EQ(static_cast<int>(pixels[i]), want) << "pixels isa " << static_cast<int>(isa) << " a " << a[i];
      }
    }
  }
  EXPECT_GT(product_differs, 100);  // the product alone would be wrong this often
}

TEST(OutputStageTest, ExactTiesAndSaturation) {
  // Multiplier 1/2: odd accumulators are exact ties (onnx: half to even; fixed: away from 0).
  for (auto mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
    for (bool two : {false, true}) {
      OutputStageSpec spec;
      spec.mode = mode;
      spec.output_scale = 2.f;
      spec.output_zero_point = 3;
      spec.has_b = two;
      spec.b.input_scale = 1.f;
      absl::StatusOr<OutputStage> stage = OutputStage::Create(spec);
      ASSERT_TRUE(stage.ok());
      std::vector<int32_t> a;
      std::vector<int8_t> b;
      for (int32_t v = -300; v <= 300; ++v) {
        a.push_back(v);
        b.push_back(static_cast<int8_t>(v % 128));
      }
      for (int32_t v : {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 1 << 30, -(1 << 30)}) {
        a.push_back(v);
        b.push_back(-128);
      }
      const int64_t n = static_cast<int64_t>(a.size());
      std::vector<int8_t> scalar(n), vec(n);
      {
        IsaGuard guard;
        SetRequantizeIsa(RequantizeIsa::kScalar);
        stage->QuantizeRow(a.data(), 1, 0, two ? b.data() : nullptr, 0, 0, n, scalar.data());
      }
      for (RequantizeIsa isa : {RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
        if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
        IsaGuard guard;
        SetRequantizeIsa(isa);
        stage->QuantizeRow(a.data(), 1, 0, two ? b.data() : nullptr, 0, 0, n, vec.data());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(scalar[i], vec[i]) << "a " << a[i];
      }
    }
  }
}

// Scales that pass Create's checks can still make a multiplier infinite, and 0 * inf is NaN:
// every ISA level writes the scalar stage's byte for it (lo), in whole 32-channel blocks and
// the tail, for uint8 and int8 outputs with a ReLU / ReLU6-like range.
TEST(OutputStageTest, NaNValuesGiveTheLowerBoundAtEveryLevel) {
  for (const ir::DataType type : {ir::DataType::kUint8, ir::DataType::kInt8}) {
    OutputStageSpec spec;
    spec.output_type = type;
    spec.output_scale = 1.f;
    spec.output_zero_point = type == ir::DataType::kInt8 ? -5 : 3;
    spec.a.input_scale = 1e20f;
    spec.a.weight_scales = std::vector<float>(40, 1e20f);  // float32 product: inf
    spec.act_min = 0.f;
    spec.act_max = 6.f;
    QFUSE_ASSERT_OK_AND_ASSIGN(OutputStage stage, OutputStage::Create(spec));
    std::vector<int32_t> a(40, 0);
    a[7] = 1;  // inf: the upper bound
    std::vector<uint8_t> want(40), got(40);
    {
      IsaGuard guard;
      SetRequantizeIsa(RequantizeIsa::kScalar);
      stage.QuantizePixels(a.data(), static_cast<const int32_t*>(nullptr), static_cast<const uint8_t*>(nullptr), 0, 40,
                           1, want.data());
    }
    EXPECT_EQ(static_cast<int>(want[0]), stage.lo() & 0xff);
    EXPECT_EQ(static_cast<int>(want[7]), stage.hi() & 0xff);
    for (RequantizeIsa isa : {RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
      if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
      IsaGuard guard;
      SetRequantizeIsa(isa);
      stage.QuantizePixels(a.data(), static_cast<const int32_t*>(nullptr), static_cast<const uint8_t*>(nullptr), 0, 40,
                           1, got.data());
      EXPECT_EQ(got, want) << "isa " << static_cast<int>(isa) << " " << ir::DataTypeName(type);
    }
  }
}

TEST(OutputStageTest, ZeroPointOutsideTheOutputTypeIsRejected) {
  for (const auto& [type, zp] : std::vector<std::pair<ir::DataType, int32_t>>{{ir::DataType::kUint8, -1},
                                                                              {ir::DataType::kUint8, 256},
                                                                              {ir::DataType::kInt8, -129},
                                                                              {ir::DataType::kInt8, 128}}) {
    OutputStageSpec spec;
    spec.output_type = type;
    spec.output_zero_point = zp;
    EXPECT_EQ(OutputStage::Create(spec).status().code(), absl::StatusCode::kInvalidArgument) << zp;
  }
}

}  // namespace
}  // namespace qfuse::runtime::int8
