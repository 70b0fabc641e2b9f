// The vector row of one QLinearChannelMap channel (runtime/int8/channel_map_row.h) against the
// scalar steps the kernel's table is built from (numerics::Dequantize, the affine in two
// roundings, the clamp as ir::ApplyUnitActivation, numerics::QuantizeLinear), on all 256 input
// bytes: INT8 / UINT8 in and out, no clamp, Relu and Clip, scales drawn at random, a shift that
// lands values on rounding ties, and an infinite scale (NaN for the zero byte).
#include "runtime/int8/channel_map_row.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "numerics/requantize.h"
#include "runtime/cpu_isa.h"

namespace qfuse::runtime::int8 {
namespace {

// `fused`: the affine as one fused multiply-add, the form the row must not take.
uint8_t Scalar(const ChannelMapRow& p, uint8_t raw, bool fused = false) {
  const int32_t q = p.x_signed ? static_cast<int8_t>(raw) : raw;
  const float d = numerics::Dequantize(q, p.x_scale, p.x_zero_point);
  const float product = d * p.scale;
  float a = fused ? std::fma(d, p.scale, p.shift) : product + p.shift;
  ir::UnitSpec clamp;
  clamp.activation = p.clamp == ChannelMapRow::Clamp::kRelu   ? ir::UnitActivation::kRelu
                     : p.clamp == ChannelMapRow::Clamp::kClip ? ir::UnitActivation::kClip
                                                              : ir::UnitActivation::kNone;
  clamp.clip_min = p.clip_min;
  clamp.clip_max = p.clip_max;
  a = ir::ApplyUnitActivation(clamp, a);
  return p.y_signed ? static_cast<uint8_t>(numerics::QuantizeLinear<int8_t>(a, p.y_scale, p.y_zero_point))
                    : numerics::QuantizeLinear<uint8_t>(a, p.y_scale, p.y_zero_point);
}

TEST(ChannelMapRowTest, EqualsTheScalarStepsOnEveryByte) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 at this ISA cap";
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> log_scale(-7.f, -1.f), affine(-3.f, 3.f);
  std::uniform_int_distribution<int> zero_point(0, 255);
  uint8_t all[256], got[256];
  for (int v = 0; v < 256; ++v) all[v] = static_cast<uint8_t>(v);
  int checked = 0;
  for (int types = 0; types < 4; ++types) {
    for (ChannelMapRow::Clamp clamp :
         {ChannelMapRow::Clamp::kNone, ChannelMapRow::Clamp::kRelu, ChannelMapRow::Clamp::kClip}) {
      for (int draw = 0; draw < 8; ++draw) {
        ChannelMapRow p;
        p.x_signed = types & 1;
        p.y_signed = types & 2;
        p.x_zero_point = zero_point(rng) - (p.x_signed ? 128 : 0);
        p.y_zero_point = zero_point(rng) - (p.y_signed ? 128 : 0);
        p.x_scale = std::exp2(log_scale(rng));
        p.y_scale = std::exp2(log_scale(rng));
        p.scale = affine(rng);
        p.shift = affine(rng);
        if (draw == 1) {  // scale 1, shift half a step: every value on a tie of the rounding
          p.x_scale = p.y_scale;
          p.scale = 1.f;
          p.shift = 0.5f * p.y_scale;
        }
        if (draw == 2) p.scale = std::numeric_limits<float>::infinity();  // 0 * inf = NaN
        p.clamp = clamp;
        p.clip_min = -0.5f;
        p.clip_max = 1.25f;
        ASSERT_EQ(ChannelMapRowSimd(p, all, 256, got), 256);
        int differ = 0;
        for (int v = 0; v < 256; ++v) differ += got[v] != Scalar(p, all[v]);
        EXPECT_EQ(differ, 0) << "types " << types << " clamp " << static_cast<int>(clamp) << " draw " << draw;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 96);
}

// Channels where a fused multiply-add would give another byte than the two roundings (found by
// search): the row gives the two roundings' bytes.
TEST(ChannelMapRowTest, KeepsTheAffineTwoRoundings) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 at this ISA cap";
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  uint8_t all[256], got[256];
  for (int v = 0; v < 256; ++v) all[v] = static_cast<uint8_t>(v);
  int found = 0;
  for (int trial = 0; trial < 20000 && found < 20; ++trial) {
    ChannelMapRow p;
    p.x_zero_point = 128;
    p.y_zero_point = 128;
    p.x_scale = 1.f / 64;
    p.y_scale = 1.f / 64;
    p.scale = 0.25f + unit(rng);
    p.shift = (static_cast<float>(trial % 64) + 0.5f) / 64;  // near the output grid's ties
    bool differs = false;
    for (int v = 0; v < 256 && !differs; ++v) differs = Scalar(p, all[v], true) != Scalar(p, all[v]);
    if (!differs) continue;
    ++found;
    ASSERT_EQ(ChannelMapRowSimd(p, all, 256, got), 256);
    for (int v = 0; v < 256; ++v) ASSERT_EQ(got[v], Scalar(p, all[v])) << "scale " << p.scale << " byte " << v;
  }
  EXPECT_GT(found, 0);
}

TEST(ChannelMapRowTest, LeavesTheTailToTheCaller) {
  if (!IsaAllowed(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 at this ISA cap";
  uint8_t x[21] = {}, y[21];
  for (uint8_t& v : y) v = 0xAB;
  const int64_t done = ChannelMapRowSimd(ChannelMapRow{}, x, 21, y);
  EXPECT_EQ(done, 16);  // one 16-lane or two 8-lane vectors
  for (int64_t i = done; i < 21; ++i) EXPECT_EQ(y[i], 0xAB) << i;
}

}  // namespace
}  // namespace qfuse::runtime::int8
