// GlobalAverageRows, onnxruntime 1.30's float32 GlobalAveragePool: rows whose means onnxruntime
// computed (GlobalAveragePool-13 on [1, C, 1, n] at optimisation level 'all' on this x86 CPU,
// C = 201 for the four-lane order, C = 200 for the sequential one its NCHWc rewrite runs), each
// chosen so that a plausible other order gives another float: summing in sequence instead of
// four lanes or the reverse, eight lanes, the lanes reduced as (a0 + a1) + (a2 + a3),
// multiplying by fl(1 / n) instead of dividing, a double sum (checked for n >= 13; n = 5 tells
// fewer apart). Also the AVX2 path equal to the portable one bit for bit on every row length
// from 1 to 80 and more, for 1 to 17 rows at once, and both near the double-precision mean.
// models/zoo/float_ops_probe.py checks whole models against onnxruntime itself.
#include "runtime/kernels/nn/global_average_row.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "tests/testing/float_bits.h"
#include "tests/testing/isa_cap_guard.h"

namespace qfuse::runtime::kernels {
namespace {

using testing::Bits;

// n floats from a 32-bit linear congruential generator: s <- s * 1664525 + 1013904223,
// x = ((s >> 8) * 2^-23 - 1) * 4 + 0.75 in float32 (the probe that asked onnxruntime used the
// same formula).
std::vector<float> SeededRow(uint32_t seed, int64_t n) {
  std::vector<float> x(n);
  uint32_t s = seed;
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    const float u = static_cast<float>(s >> 8) * 0x1p-23f - 1.0f;
    v = u * 4.0f + 0.75f;
  }
  return x;
}

struct OnnxruntimeRow {
  GlobalAverageOrder order;
  int64_t n;
  uint32_t seed;
  uint32_t mean_bits;
};

TEST(GlobalAverageRowTest, OnnxruntimesValues) {
  const OnnxruntimeRow rows[] = {
      {GlobalAverageOrder::kFourLanes, 5, 5112u, 0x3f367e1d},
      {GlobalAverageOrder::kFourLanes, 13, 13007u, 0xbeb29636},
      {GlobalAverageOrder::kFourLanes, 49, 49057u, 0x3d4119b2},
      {GlobalAverageOrder::kFourLanes, 169, 169189u, 0x3f3c31c0},
      {GlobalAverageOrder::kFourLanes, 196, 196011u, 0x3ee362a5},
      {GlobalAverageOrder::kFourLanes, 300, 300009u, 0x3f342d32},
      {GlobalAverageOrder::kSequential, 5, 5521u, 0xbf584896},
      {GlobalAverageOrder::kSequential, 13, 13606u, 0x3ec4e4ab},
      {GlobalAverageOrder::kSequential, 49, 49500u, 0x3f110cd8},
      {GlobalAverageOrder::kSequential, 169, 169500u, 0x3f617024},
      {GlobalAverageOrder::kSequential, 196, 196511u, 0x3f5415c3},
      {GlobalAverageOrder::kSequential, 300, 300509u, 0x3f43e32d},
  };
  // Nine copies of each row, so the AVX2 path's eight-row block and its remainder both see it.
  constexpr int64_t kCopies = 9;
  for (const OnnxruntimeRow& row : rows) {
    const std::vector<float> one = SeededRow(row.seed, row.n);
    std::vector<float> x;
    for (int64_t c = 0; c < kCopies; ++c) x.insert(x.end(), one.begin(), one.end());
    for (bool vector : {true, false}) {
      std::vector<float> y(kCopies);
      GlobalAverageRows(x.data(), kCopies, row.n, row.order, y.data(), vector);
      for (int64_t c = 0; c < kCopies; ++c) {
        EXPECT_EQ(Bits(y[c]), row.mean_bits)
            << (row.order == GlobalAverageOrder::kFourLanes ? "four lanes" : "sequential") << " n " << row.n << " seed "
            << row.seed << " copy " << c << " vector " << vector;
      }
    }
  }
}

TEST(GlobalAverageRowTest, BothPathsEqualAndNearTheExactMeans) {
  std::mt19937 rng(17);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 80; ++n) lengths.push_back(n);
  for (int64_t n : {169, 196, 225, 300, 1000}) lengths.push_back(n);
  for (int64_t n : lengths) {
    for (int64_t rows : {1, 7, 8, 9, 17}) {
      for (float spread : {1.f, 100.f}) {
        std::uniform_real_distribution<float> dist(-spread, 3 * spread);
        std::vector<float> x(rows * n);
        for (float& v : x) v = dist(rng);
        for (GlobalAverageOrder order : {GlobalAverageOrder::kFourLanes, GlobalAverageOrder::kSequential}) {
          std::vector<float> fast(rows), portable(rows);
          GlobalAverageRows(x.data(), rows, n, order, fast.data(), true);
          GlobalAverageRows(x.data(), rows, n, order, portable.data(), false);
          ASSERT_EQ(Bits(fast), Bits(portable)) << "n " << n << " rows " << rows << " spread " << spread;
          for (int64_t r = 0; r < rows; ++r) {
            double sum = 0, magnitude = 0;
            for (int64_t i = 0; i < n; ++i) {
              sum += x[r * n + i];
              magnitude += std::fabs(x[r * n + i]);
            }
            // Each of the n - 1 float additions and the division rounds once.
            EXPECT_NEAR(fast[r], sum / n, (n + 1) * 0x1p-24 * magnitude / n + 1e-30) << "n " << n << " row " << r;
          }
        }
      }
    }
  }
}

TEST(GlobalAverageRowTest, OrderFollowsOnnxruntimesNchwcRewrite) {
  auto order = [](int64_t rank, int64_t channels, bool graph_input, int64_t block = 8) {
    GlobalAverageInput input;
    input.rank = rank;
    input.channels = channels;
    input.graph_input = graph_input;
    return GlobalAverageOrderFor(input, block);
  };
  EXPECT_EQ(order(4, 1000, true), GlobalAverageOrder::kSequential);
  EXPECT_EQ(order(4, 8, true), GlobalAverageOrder::kSequential);
  EXPECT_EQ(order(4, 1000, false), GlobalAverageOrder::kFourLanes);  // SqueezeNet's DequantizeLinear -> pool
  EXPECT_EQ(order(4, 10, true), GlobalAverageOrder::kFourLanes);
  EXPECT_EQ(order(4, -1, true), GlobalAverageOrder::kFourLanes);  // channels symbolic
  EXPECT_EQ(order(3, 16, true), GlobalAverageOrder::kFourLanes);  // 1-D pool
  EXPECT_EQ(order(5, 16, true), GlobalAverageOrder::kFourLanes);  // 3-D pool
  EXPECT_EQ(order(-1, 16, true), GlobalAverageOrder::kFourLanes);
  // AVX-512's block of 16: 1000 channels are not a whole number of blocks (onnxruntime 1.30 on
  // an AVX-512 EPYC keeps MlasPool's four lanes there: float_ops_probe.py's gap_*_c1000).
  EXPECT_EQ(order(4, 1000, true, 16), GlobalAverageOrder::kFourLanes);
  EXPECT_EQ(order(4, 64, true, 16), GlobalAverageOrder::kSequential);
  EXPECT_EQ(order(4, 8, true, 16), GlobalAverageOrder::kFourLanes);
}

TEST(GlobalAverageRowTest, NchwcBlockFollowsTheIsaCap) {
  testing::IsaCapGuard guard;
  SetIsaCap(Isa::kAvx2);
  EXPECT_EQ(OnnxruntimeNchwcBlock(), 8);
  SetIsaCap(Isa::kAvx512);
  EXPECT_EQ(OnnxruntimeNchwcBlock(), DetectedIsa() >= Isa::kAvx512 ? 16 : 8);
}

}  // namespace
}  // namespace qfuse::runtime::kernels
