// OutputStage's byte map (a requantizing clamp folded into the unit before it,
// runtime/int8/qdq_lowering.h): every row, channel and pixel function must write the clamp's
// table applied to the stage's bytes, at every ISA level, whether the map runs as the table or
// as its checked linear form (OutputStage::SetByteMap).
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/requantize_isa_guard.h"
#include "runtime/int8/output_stage.h"
#include "runtime/int8/unary_requantization.h"

namespace qfuse::runtime::int8 {
namespace {

using IsaGuard = testing::RequantizeIsaGuard;

struct Clamp {
  float lo, hi;
};
constexpr float kLowest = std::numeric_limits<float>::lowest(), kMax = std::numeric_limits<float>::max();
constexpr Clamp kClamps[] = {{0.f, kMax}, {0.f, 6.f}, {-1.f, 2.5f}, {kLowest, kMax}};

ActivationQuant RandomQuant(std::mt19937& rng) {
  std::uniform_real_distribution<float> log_scale(-9.f, -1.f);
  ActivationQuant q;
  q.type = rng() % 2 == 0 ? ir::DataType::kInt8 : ir::DataType::kUint8;
  q.scale = std::exp2(log_scale(rng));
  const int lo = q.type == ir::DataType::kInt8 ? -128 : 0;
  q.zero_point = lo + static_cast<int>(rng() % 256);
  if (rng() % 3 == 0) q.zero_point = q.type == ir::DataType::kInt8 ? -128 : 0;  // the non-negative grids
  return q;
}

// One stage with and without the map of clamp `c` to `y`, on `pixels` x `channels` random
// accumulators; returns whether the linear form was taken.
bool CheckOne(numerics::RequantizeMode mode, const ActivationQuant& stage_q, const ActivationQuant& y, Clamp c,
              float ratio, int64_t channels, std::mt19937& rng) {
  OutputStageSpec spec;
  spec.mode = mode;
  spec.output_type = stage_q.type;
  spec.output_scale = stage_q.scale;
  spec.output_zero_point = stage_q.zero_point;
  spec.a.input_scale = 0.02f;
  spec.a.weight_scales.clear();
  std::uniform_real_distribution<float> w(0.0005f, 0.01f);
  for (int64_t k = 0; k < channels; ++k) spec.a.weight_scales.push_back(w(rng));
  absl::StatusOr<OutputStage> plain = OutputStage::Create(spec);
  EXPECT_TRUE(plain.ok()) << plain.status();
  if (!plain.ok()) return false;
  absl::StatusOr<ByteTable> table = ClampTable(mode, stage_q, y, c.lo, c.hi);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return false;
  OutputStage mapped = *plain;
  mapped.SetByteMap(*table, y.type, ratio);
  EXPECT_EQ(mapped.output_type(), y.type);

  const int64_t pixels = 9, n = pixels * channels;
  std::vector<int32_t> a(n), bias(channels);
  // Accumulators over the stage's whole output range and beyond (both saturations).
  std::uniform_int_distribution<int32_t> acc(-400000, 400000), small(-3000, 3000);
  for (int32_t& v : a) v = rng() % 4 == 0 ? small(rng) : acc(rng);
  for (int32_t& v : bias) v = small(rng);
  for (RequantizeIsa isa : {RequantizeIsa::kScalar, RequantizeIsa::kAvx2, RequantizeIsa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(MaxRequantizeIsa())) continue;
    IsaGuard guard;
    SetRequantizeIsa(isa);
    std::vector<uint8_t> want(n), got(n), row(channels), row_want(channels);
    const uint8_t* none = nullptr;
    plain->QuantizePixels(a.data(), bias.data(), none, 0, channels, pixels, want.data());
    for (uint8_t& v : want) v = (*table)[v];
    mapped.QuantizePixels(a.data(), bias.data(), none, 0, channels, pixels, got.data());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(int{got[i]}, int{want[i]}) << "pixels, isa " << static_cast<int>(isa) << ", element " << i;
      if (got[i] != want[i]) return false;
    }
    // One channel's row (the NCHW kernel) and one pixel's channels.
    plain->QuantizeRow(a.data(), 1, bias[0], none, 0, 0, channels, row_want.data());
    for (uint8_t& v : row_want) v = (*table)[v];
    mapped.QuantizeRow(a.data(), 1, bias[0], none, 0, 0, channels, row.data());
    EXPECT_EQ(row, row_want) << "row, isa " << static_cast<int>(isa);
    mapped.QuantizeChannels(a.data(), bias.data(), none, 0, 0, channels, row.data());
    for (int64_t j = 0; j < channels; ++j) EXPECT_EQ(int{row[j]}, int{want[j]}) << "channels, channel " << j;
  }
  return mapped.has_linear_byte_map();
}

TEST(ByteMapTest, EveryPathWritesTheTableOfTheStagesBytes) {
  std::mt19937 rng(5);
  int linear = 0, table_only = 0;
  for (int trial = 0; trial < 160; ++trial) {
    const auto mode = trial % 4 == 3 ? numerics::RequantizeMode::kFixed : numerics::RequantizeMode::kOnnx;
    const ActivationQuant stage_q = RandomQuant(rng), y = RandomQuant(rng);
    const Clamp c = kClamps[trial % 4];
    const int64_t channels = std::vector<int64_t>{96, 37, 40, 5}[(trial / 4) % 4];
    const bool took_linear = CheckOne(mode, stage_q, y, c, stage_q.scale / y.scale, channels, rng);
    if (::testing::Test::HasFailure()) return;
    (took_linear ? linear : table_only)++;
    EXPECT_FALSE(took_linear && mode == numerics::RequantizeMode::kFixed);
  }
  // Both forms must have run for the test to say anything about them.
  EXPECT_GT(linear, 20);
  EXPECT_GT(table_only, 20);
}

TEST(ByteMapTest, AWrongRatioFallsBackToTheTable) {
  std::mt19937 rng(7);
  const ActivationQuant stage_q{ir::DataType::kUint8, 0.0546477f, 0};
  const ActivationQuant y{ir::DataType::kUint8, 6.f / 256.f, 0};
  // The right ratio gives the linear form for this Relu6 (MobileNetV2's bn-level clamp) ...
  EXPECT_TRUE(CheckOne(numerics::RequantizeMode::kOnnx, stage_q, y, {0.f, 6.f}, stage_q.scale / y.scale, 96, rng));
  // ... a wrong one is refused by the check, and the bytes are still the table's.
  EXPECT_FALSE(CheckOne(numerics::RequantizeMode::kOnnx, stage_q, y, {0.f, 6.f}, 1.5f * stage_q.scale / y.scale, 96, rng));
}

}  // namespace
}  // namespace qfuse::runtime::int8
