// SoftmaxRow, onnxruntime 1.30's float32 Softmax and LogSoftmax: five rows whose outputs
// onnxruntime computed (Softmax-13 / LogSoftmax-13 over the last axis on this x86 CPU): two
// vectors of 8, chosen so that the lanes' summation order matters; a vector of 8 and a tail of
// 1; a row of 12 reaching the exp kernel's lower clamp, where exp gives 0; LogSoftmax rows of 5
// and 17. Also the AVX2 + FMA path equal to the portable one bit for bit on every row length
// from 1 to 80 and more, and both near the double-precision result.
// models/zoo/float_ops_probe.py checks a million more values against onnxruntime itself.
#include "runtime/kernels/nn/softmax_row.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/float_bits.h"

namespace qfuse::runtime::kernels {
namespace {

using testing::Bits;
using testing::Floats;

struct OnnxruntimeRow {
  bool log;
  std::vector<uint32_t> x, y;
};

TEST(SoftmaxRowTest, OnnxruntimesValues) {
  const OnnxruntimeRow rows[] = {
      // 16 values, picked because summing the eight lanes in order instead of in pairs changes them.
      {false,
       {0xc062cd97, 0x40429b76, 0x3fc6b278, 0xbef99ba4, 0x3f976fe5, 0xc001aa82, 0x3f370d2a, 0xbfe85e60, 0x3f10fd53,
        0x403d5445, 0xbf826b03, 0x40232815, 0xc04690f7, 0xbf5d8f98, 0xc08303ea, 0xbe9a800f},
       {0x39e12cc3, 0x3e9f2a44, 0x3d8fb691, 0x3c1584e1, 0x3d46b0b6, 0x3b006817, 0x3cf8d8bc, 0x3b1e8405, 0x3cd677a6,
        0x3e9290bf, 0x3bafc5fe, 0x3e42bdc7, 0x3a2f0678, 0x3bcceb3c, 0x3981dbd8, 0x3c340a55}},
      {false,
       {0xc1004f1c, 0xc153e5bf, 0xc01ef391, 0x40868ae0, 0x4135c477, 0x3f8c6c98, 0xc0b0d8de, 0xc0fb2135, 0x40ef9941},
       {0x3180e4da, 0x2db1a9e1, 0x357f5b20, 0x3a483009, 0x3f7a959c, 0x380f3b03, 0x3342e195, 0x31990274, 0x3ca6c13a}},
      {false,
       {0x00000000, 0xc2af0000, 0xc2afcccd, 0xc2b06666, 0xc2b40000, 0xc2c80000, 0x40600000, 0xc2adcccd, 0x3a83126f,
        0xc0100000, 0xc2ae999a, 0xc2af6666},
       {0x3ce89537, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x3f70b0b2, 0x00000000, 0x3ce8d0c8,
        0x3b441cc8, 0x00000000, 0x00000000}},
      {true,
       {0x41287f9f, 0x418e1e8b, 0xc1cc436b, 0xbfb09864, 0x412231f2},
       {0xc0e784d3, 0xba9e4f84, 0xc22d3238, 0xc1992a8a, 0xc0f4202d}},
      {true,
       {0x41a01f48, 0x427e3782, 0x42307058, 0xc22fde0e, 0xc1ffc983, 0x426f12ff, 0xc29e50ab, 0x424d9610, 0x423e1fdb,
        0xc0a42c4c, 0xc1fc1e56, 0xc20dcebf, 0xc21ce22b, 0xc10c9acb, 0x3f3a4bf4, 0x4108f406, 0x429e8f62},
       {0xc26d0f20, 0xc17b9d08, 0xc20cae6c, 0xc2f67e69, 0xc2de81c3, 0xc19c178a, 0xc31e7006, 0xc1df1168, 0xc1fdfdd2,
        0xc2a8d227, 0xc2dd96f8, 0xc2e576c2, 0xc2ed0078, 0xc2b022bb, 0xc29d1aca, 0xc28d70e1, 0xb3ffffff}},
  };
  for (const OnnxruntimeRow& row : rows) {
    const std::vector<float> x = Floats(row.x);
    for (bool vector : {true, false}) {
      std::vector<float> y(x.size());
      SoftmaxRow(x.data(), static_cast<int64_t>(x.size()), row.log, y.data(), vector);
      EXPECT_EQ(Bits(y), row.y) << (row.log ? "LogSoftmax" : "Softmax") << " n " << x.size() << " vector " << vector;
    }
  }
}

TEST(SoftmaxRowTest, BothPathsEqualAndNearTheExactValues) {
  std::mt19937 rng(13);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 80; ++n) lengths.push_back(n);
  for (int64_t n : {197, 1000}) lengths.push_back(n);
  for (int64_t n : lengths) {
    for (float spread : {3.f, 80.f, 300.f}) {
      std::uniform_real_distribution<float> dist(-spread, spread);
      std::vector<float> x(n);
      for (float& v : x) v = dist(rng);
      double max = x[0];
      for (float v : x) max = std::max<double>(max, v);
      double sum = 0;
      for (float v : x) sum += std::exp(v - max);
      for (bool log : {false, true}) {
        std::vector<float> fast(n), portable(n);
        SoftmaxRow(x.data(), n, log, fast.data(), true);
        SoftmaxRow(x.data(), n, log, portable.data(), false);
        ASSERT_EQ(Bits(fast), Bits(portable)) << "n " << n << " spread " << spread << " log " << log;
        for (int64_t i = 0; i < n; ++i) {
          const double want = log ? x[i] - max - std::log(sum) : std::exp(x[i] - max) / sum;
          ASSERT_NEAR(fast[i], want, 1e-6 * (1 + std::abs(want))) << "n " << n << " log " << log << " i " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::kernels
