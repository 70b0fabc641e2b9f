// LayerNormRow, onnxruntime 1.30's float32 LayerNormalization: five rows whose outputs, mean and
// inverse standard deviation onnxruntime computed (its LayerNormalization-17 on this x86 CPU; the
// rows take the AVX2 kernel with tails of 1 and 4, with and without a bias, and the scalar
// Welford fallback of rows shorter than 8; the last two were picked because each rounding
// step of the kernel, done another way, changes them), the AVX2 + FMA path equal to the portable one
// bit for bit on every row length from 1 to 80 and more, and both within 2e-6 of the
// double-precision normalisation. models/zoo/float_ops_probe.py checks thousands more rows
// against onnxruntime itself.
#include "runtime/kernels/nn/layer_norm_row.h"

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

constexpr float kEpsilon = 9.999999747378752e-06f;

struct OnnxruntimeRow {
  std::vector<uint32_t> x, scale, bias, y;
  uint32_t mean, inv;
};

TEST(LayerNormRowTest, OnnxruntimesValues) {
  const OnnxruntimeRow rows[] = {
      // 9 values: the AVX2 kernel, one group of 8 and a tail of 1.
      {{0x40031f19, 0x3e1a9e1e, 0xbff3fb5a, 0x3e5fdd6a, 0xc04baa44, 0xc0a5c4b6, 0xbfe6b639, 0xbf94136d, 0xbfc4236a},
       {0x3f3e7426, 0x3ed9e39b, 0x3f9955d4, 0x3fa1d57c, 0x3f82eda7, 0x3fd5cf24, 0x3f881acc, 0x3f62b82c, 0x3f5c70d3},
       {0xbf312d84, 0xbf708c5b, 0xbeaf6ca6, 0xc00a8ebb, 0x3dbfbfac, 0xbfd0205a, 0xbf80e190, 0xbf3c8d5c, 0x3ecfe86a},
       {0x3f19b93d, 0xbf1c4bd3, 0xbf2b0724, 0xbf9266c9, 0xbf58ef16, 0xc09b75eb, 0xbf9eb08c, 0xbf23d992, 0x3eabd878},
       0xbfaf875a, 0x3f020ce2},
      // 5 values around 50: the scalar Welford fallback.
      {{0x424a7c8d, 0x424a4762, 0x42485386, 0x424a9d79, 0x4250563e},
       {0x3f141569, 0x3f932638, 0x40240fb7, 0x3f8e8d61, 0xbe13b683},
       {0x3fd42873, 0x3f3e7899, 0x3f56e02f, 0xbf9c77f3, 0xbfc2a68a},
       {0x3fc05311, 0x3eb1ef45, 0xbff35cac, 0xbfbbdabd, 0xbfe5c515},
       0x424b3570, 0x3fbde6a6},
      // 12 values without a bias: a tail of 4 (products, then sums).
      {{0x3f3dcf7f, 0x3e4caa9a, 0xc0793da7, 0x3fdec371, 0x3eb7c6e6, 0x3fe1ece4, 0x3fc80ffb, 0x3f091415, 0xbc741fa7,
        0x3f39d1de, 0x3f9b308f, 0xbe4e01b5},
       {0x3f214853, 0x3f23a317, 0x3fa03c45, 0x3edbc270, 0x3f472a34, 0x3f27505d, 0x3f6a6a17, 0x3ee7741a, 0x3f25dbae,
        0x3f6a92a7, 0x3fd83c37, 0x3efc8e3f},
       {},
       {0x3e1b5dbe, 0xbdb09c79, 0xc06e6301, 0x3ecd38d7, 0xbc9c76eb, 0x3f1f1cff, 0x3f3e1068, 0x3d354f8a, 0xbe3c5bd0,
        0x3e57d1f2, 0x3f757695, 0xbe50b02c},
       0x3ec9e4f6, 0x3f319c11},
      // 12 values with a bias, chosen because rounding any step differently changes them: the
      // tail of 4 taken as fused multiply-adds, or the output as a product and a sum.
      {{0x3f3153b5, 0xc00c64c7, 0xbf420d87, 0x3fb9b3cb, 0xc068745a, 0x4037cb4d, 0x3f8ff22c, 0x409d901d, 0xbfad279d,
        0xc0adbc44, 0x3f150b06, 0x3ec46cc9},
       {0x3f214853, 0x3f23a317, 0x3fa03c45, 0x3edbc270, 0x3f472a34, 0x3f27505d, 0x3f6a6a17, 0x3ee7741a, 0x3f25dbae,
        0x3f6a92a7, 0x3fd83c37, 0x3efc8e3f},
       {0x3f0de48a, 0x3efccbcf, 0x3f4232d2, 0xbe90eaca, 0xbeda4aa7, 0x3e8b47ac, 0x3f964f42, 0xbd92116d, 0xbfe4b255,
        0x3f0c0841, 0xbdf23edf, 0x3fe47fdb},
       {0x3f3e2cc6, 0xbaefec59, 0x3eea13d3, 0xbd08c995, 0xbfb91caf, 0x3f7f79b4, 0x3fcc3ea9, 0x3f46b2c4, 0xc0058382,
        0xbfa23583, 0x3ea2ca56, 0x3ff022cc},
       0xbde40d7d, 0x3ebea17d},
      // 20 values: likewise for the lanes' fused multiply-adds and the mean summed in double.
      {{0x3fa6e34f, 0x4009898b, 0x3fee3c02, 0xbece04a5, 0x4083707d, 0x3fcf9a5b, 0xbed94110, 0x4033eb03, 0xbd4bfb0f,
        0x3d8409f7, 0xbf2f8c59, 0x400d61ce, 0x403efa7b, 0x40273dcb, 0xc01c9322, 0x3f979738, 0xbfc419b2, 0x3f6953d6,
        0x3f3fb9a6, 0xbeaa8fdb},
       {0x3fa70807, 0x3d9d1ee3, 0x3f6479df, 0x3fa2faa8, 0xbe38dbb0, 0x3f81eb00, 0x3f8fd205, 0x3f76f5eb, 0x3f50a8c1,
        0x3fa0bdf2, 0x3fb07c5d, 0xbec0755b, 0x3f7709f3, 0x3fbc8a8c, 0x3dcf9468, 0x3f66d0fa, 0x3f9172a8, 0x3e3b287e,
        0x3f437b33, 0x3f99dda7},
       {0xbf35e18a, 0x3f9fc984, 0xbeb69cab, 0xbf82ab1b, 0x3f099567, 0x3fa53517, 0xbf990ec7, 0x3dd6431c, 0xbd837608,
        0xbf13d6f9, 0x3ff11518, 0xbfaac9e1, 0x3fec6407, 0xbed6d2dd, 0xbf00bcac, 0xbea62a2c, 0x3e90d829, 0xbf86042b,
        0x3f2631af, 0xbea90943},
       {0xbed36b46, 0x3fa727b0, 0x3e1deeed, 0xc004aad2, 0x3e3bed1c, 0x3fdc5dce, 0xc008ebfe, 0x3f9c905b, 0xbf0f6224,
        0xbfa05df2, 0x3f00b59e, 0xbfd0acad, 0x40446649, 0x3f8dd3b3, 0xbf36f373, 0xbe3dfddb, 0xbfb97f69, 0xbf865aab,
        0x3f0fbdb0, 0xbfa2cf9a},
       0x3f6f4f9c, 0x3f1e302d},
  };
  for (const OnnxruntimeRow& row : rows) {
    const std::vector<float> x = Floats(row.x), scale = Floats(row.scale), bias = Floats(row.bias);
    for (bool vector : {true, false}) {
      std::vector<float> y(x.size());
      const LayerNormRowStats stats = LayerNormRow(x.data(), scale.data(), bias.empty() ? nullptr : bias.data(),
                                                   static_cast<int64_t>(x.size()), kEpsilon, y.data(), vector);
      EXPECT_EQ(Bits(y), row.y) << "n " << x.size() << " vector " << vector;
      EXPECT_EQ(Bits(stats.mean), row.mean);
      EXPECT_EQ(Bits(stats.inv_std_dev), row.inv);
    }
  }
}

TEST(LayerNormRowTest, BothPathsEqualAndNearTheExactNormalisation) {
  std::mt19937 rng(11);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 80; ++n) lengths.push_back(n);
  for (int64_t n : {192, 768, 1000}) lengths.push_back(n);
  for (int64_t n : lengths) {
    for (float offset : {0.3f, 50.f}) {
      std::normal_distribution<float> dist(offset, 2.f);
      std::vector<float> x(n), scale(n), bias(n);
      for (float& v : x) v = dist(rng);
      for (int64_t i = 0; i < n; ++i) {
        scale[i] = 0.5f + 0.01f * static_cast<float>(i % 50);
        bias[i] = 0.02f * static_cast<float>(i % 30) - 0.3f;
      }
      double mean = 0, var = 0;
      for (float v : x) mean += v;
      mean /= static_cast<double>(n);
      for (float v : x) var += (v - mean) * (v - mean);
      var /= static_cast<double>(n);
      for (bool with_bias : {true, false}) {
        std::vector<float> fast(n), portable(n);
        const float* b = with_bias ? bias.data() : nullptr;
        const LayerNormRowStats s1 = LayerNormRow(x.data(), scale.data(), b, n, kEpsilon, fast.data(), true);
        const LayerNormRowStats s2 = LayerNormRow(x.data(), scale.data(), b, n, kEpsilon, portable.data(), false);
        ASSERT_EQ(Bits(fast), Bits(portable)) << "n " << n << " offset " << offset << " bias " << with_bias;
        EXPECT_EQ(Bits(s1.mean), Bits(s2.mean));
        EXPECT_EQ(Bits(s1.inv_std_dev), Bits(s2.inv_std_dev));
        for (int64_t i = 0; i < n; ++i) {
          const double want = (x[i] - mean) / std::sqrt(var + kEpsilon) * scale[i] + (with_bias ? bias[i] : 0.0);
          // Large offsets cost float32 digits in x itself (50 has an ulp of 3.8e-6).
          const double tolerance = offset > 1 ? 2e-5 : 2e-6;
          ASSERT_NEAR(fast[i], want, tolerance * (1 + std::abs(want))) << "n " << n << " offset " << offset;
        }
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::kernels
