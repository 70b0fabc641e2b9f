// SoftmaxRow, onnxruntime 1.30's float32 Softmax and LogSoftmax: five rows whose outputs
// onnxruntime computed (Softmax-13 / LogSoftmax-13 over the last axis on an AVX2 x86 CPU): two
// vectors of 8, chosen so that the lanes' summation order matters; a vector of 8 and a tail of
// 1; a row of 12 reaching the exp kernel's lower clamp, where exp gives 0; LogSoftmax rows of 5
// and 17; the same rows and three more from onnxruntime on an AVX-512 CPU. Also each kernel's
// vector path equal to its portable one bit for bit on every row length
// from 1 to 80 and more, and both near the double-precision result.
// models/zoo/float_ops_probe.py checks a million more values against onnxruntime itself.
#include "runtime/kernels/nn/softmax_row.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "tests/testing/float_bits.h"

namespace qfuse::runtime::kernels {
namespace {

using testing::Bits;
using testing::Floats;

struct OnnxruntimeRow {
  bool log;
  std::vector<uint32_t> x, y;
};

// Each row through `kernel`'s vector and portable paths gives onnxruntime's bits.
void ExpectOnnxruntimesRows(const std::vector<OnnxruntimeRow>& rows, SoftmaxSumKernel kernel) {
  for (const OnnxruntimeRow& row : rows) {
    const std::vector<float> x = Floats(row.x);
    for (bool vector : {true, false}) {
      std::vector<float> y(x.size());
      SoftmaxRow(x.data(), static_cast<int64_t>(x.size()), row.log, y.data(), kernel, vector);
      EXPECT_EQ(Bits(y), row.y) << (row.log ? "LogSoftmax" : "Softmax") << " n " << x.size() << " vector " << vector;
    }
  }
}

// Rows as onnxruntime 1.30 computed them on an AVX2 machine (MlasComputeSumExpF32KernelFma3).
std::vector<OnnxruntimeRow> Avx2MachineRows() {
  return {
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
}

TEST(SoftmaxRowTest, OnnxruntimesValues) { ExpectOnnxruntimesRows(Avx2MachineRows(), SoftmaxSumKernel::kFma3); }

// The same five rows and three more as onnxruntime 1.30 computed them on an AVX-512 machine
// (AMD EPYC with avx512f, MlasComputeSumExpF32KernelAvx512F): the third row, whose values
// near the exp kernel's lower clamp are subnormal here and 0 on the AVX2 machine; a Softmax
// and a LogSoftmax of 53 (its loop of 48 and a masked tail), and a Softmax of 20 values near the
// clamp.
TEST(SoftmaxRowTest, OnnxruntimesAvx512Values) {
  // Rows 1, 2, 4 and 5 of the AVX2 machine's: onnxruntime gave the same bits on the AVX-512
  // machine (for these values; the two kernels' sums are not the same in general).
  std::vector<OnnxruntimeRow> rows = Avx2MachineRows();
  rows.erase(rows.begin() + 2);
  const std::vector<OnnxruntimeRow> own = {
      {false,
       {0x00000000, 0xc2af0000, 0xc2afcccd, 0xc2b06666, 0xc2b40000, 0xc2c80000, 0x40600000, 0xc2adcccd, 0x3a83126f,
        0xc0100000, 0xc2ae999a, 0xc2af6666},
       {0x3ce89537, 0x0003160a, 0x00021195, 0x00018853, 0x000040da, 0x00000001, 0x3f70b0b2, 0x00059f8c, 0x3ce8d0c8,
        0x3b441cc8, 0x0003c4f5, 0x000286d5}},
      {false,
       {0x3b71dba5, 0x3f656fc3, 0xbf5289b2, 0xc02afe5f, 0xbfae97f5, 0xc03e6569, 0x3e38c2db, 0x4080a921, 0xbfbd01df,
        0xbfee432a, 0x3fbc196f, 0x3f890b6c, 0x3ea1ea92, 0xc032a65e, 0xbdb3b923, 0x40057f8b, 0xc0810b6b, 0xbfafb976,
        0xc0b68473, 0xc077975c, 0xc0b0ce7b, 0xbf348ccc, 0xc0735988, 0x3f5054be, 0x3ef0c509, 0xbf0f901f, 0xc0f19be3,
        0xbfcedbab, 0xbe14feb2, 0x3eae0ae8, 0xc092e49e, 0xbfb7750f, 0xc03be02b, 0xc01b4bf8, 0x404bb14a, 0xc01b0bf2,
        0xbdc7d038, 0x4029cd88, 0xbfe01a42, 0xbeab92fe, 0x3ea9ac45, 0x3e43f007, 0xc06b35f2, 0x3e69e71d, 0x40827272,
        0xc09486a1, 0x40250061, 0x3eb753ea, 0xbff6531b, 0x40c00a3d, 0x40125a97, 0xc0664373, 0x3e64e9f2},
       {0x3ad41fc4, 0x3b817775, 0x3a39b71e, 0x38e9c288, 0x39d81ad0, 0x38aca05f, 0x3afd21da, 0x3db80e81, 0x39c11702,
        0x398369ea, 0x3be5af9d, 0x3b9a234f, 0x3b10fa2b, 0x38cf6744, 0x3ac19632, 0x3c54b6d1, 0x37efc798, 0x39d63433,
        0x36b45dce, 0x380d429a, 0x36d79b2d, 0x3a50cba3, 0x3816f078, 0x3b6e7137, 0x3b291dce, 0x3a71401a, 0x3563a714,
        0x39a7f480, 0x3ab6b967, 0x3b1473b1, 0x3789455a, 0x39c9a578, 0x38b38f86, 0x39155e25, 0x3d1f3e9b, 0x3915f3d7,
        0x3abfb26e, 0x3cbb8d98, 0x3992c926, 0x3a972a5e, 0x3b1330b7, 0x3affe8ff, 0x382b6892, 0x3b04c9c1, 0x3dc29fb1,
        0x37827132, 0x3cadff57, 0x3b172b2e, 0x3976c892, 0x3f26bc2f, 0x3c820490, 0x38392f21, 0x3b04248c}},
      {true,
       {0x3fdd72e5, 0xbf10fc13, 0x40031e68, 0xbe4c5759, 0x40001c8d, 0x408a1922, 0xc001ba27, 0x3f1c02ad, 0xbfb1e8fd,
        0x3ec37bfa, 0xc063f0fc, 0xbfde73aa, 0xbf16adb3, 0x402c900b, 0x405be1f4, 0xc07e1e0a, 0xc0189243, 0x3ff86932,
        0xc0bf45b5, 0xbfb1db73, 0xbe956ec7, 0x407158cd, 0x40045d95, 0xbf7b4cc7, 0xbf8d887c, 0xbf40266b, 0x40924242,
        0xbfa45c90, 0xbf6939fe, 0x3f8764ea, 0xbeb980df, 0xbf1783a8, 0xc055e6a1, 0xbd0d9368, 0xbfaa55cf, 0x405fe583,
        0x3ffac936, 0xbd94569f, 0x40005444, 0xbf828289, 0x404a021d, 0xbc84b319, 0x3fe004d2, 0xc077d9fc, 0x3f852009,
        0xc0a2114e, 0xc0c3643f, 0xbf69d697, 0xc02cc93e, 0x3efbfc2f, 0x40d77f24, 0xc01fb0dc, 0xbfef9826},
       {0xc0ac750b, 0xc0f5f146, 0xc0a24290, 0xc0ea347f, 0xc0a3c37e, 0xc0337145, 0xc112576c, 0xc0d0516e, 0xc1082602,
        0xc0d79a04, 0xc12ae521, 0xc10db757, 0xc0f6a77a, 0xc08d89be, 0xc06bc195, 0xc1317064, 0xc1180d73, 0xc0a5b778,
        0xc1518bbc, 0xc1082450, 0xc0ed28b0, 0xc0564abc, 0xc0a1a2fa, 0xc1019daf, 0xc10399f2, 0xc0fbd691, 0xc0231f05,
        0xc1067474, 0xc1007c82, 0xc0c1f88a, 0xc0ef69d2, 0xc0f6c239, 0xc127628a, 0xc0e4eceb, 0xc107339c, 0xc067be06,
        0xc0a51f76, 0xc0e6231e, 0xc0a3a7a2, 0xc1023933, 0xc07da16c, 0xc0e45677, 0xc0abd090, 0xc12fdf61, 0xc0c289c2,
        0xc142f189, 0xc1539b02, 0xc100864c, 0xc11d1b32, 0xc0d41201, 0xbec52a07, 0xc119d519, 0xc10fdbe7}},
      {false,
       {0x00000000, 0xc2afcccd, 0xc2afcccd, 0xc2afcccd, 0xc2afcccd, 0xc2ae0000, 0xc2afcccd,
        0xc2b06666, 0xc2afcccd, 0x3f800000, 0xc2afcccd, 0xc2afcccd, 0xc2afcccd, 0xc2ad999a,
        0xc2afcccd, 0xc2afcccd, 0xc2afcccd, 0xc2afcccd, 0xc2afcccd, 0xc2afcccd},
       {0x3e89b2b1, 0x00139882, 0x00139882, 0x00139882, 0x00139882, 0x003032a3, 0x00139882,
        0x000e8456, 0x00139882, 0x3f3b26a8, 0x00139882, 0x00139882, 0x00139882, 0x003ade66,
        0x00139882, 0x00139882, 0x00139882, 0x00139882, 0x00139882, 0x00139882}},
  };
  rows.insert(rows.end(), own.begin(), own.end());
  ExpectOnnxruntimesRows(rows, SoftmaxSumKernel::kAvx512F);
}

// The AVX-512F kernel's exp where its results are subnormal: the portable path's scaling must
// give vscalefps's bits on 8193 exponents from the clamp at -103.97 to -87, next to a 0 that
// sets the maximum.
TEST(SoftmaxRowTest, Avx512SubnormalExpsEqualVscalef) {
  if (!IsaAllowed(Isa::kAvx512)) GTEST_SKIP() << "AVX-512 not allowed (CPU or QFUSE_MAX_ISA)";
  std::vector<float> x(8194);
  x[0] = 0;
  for (size_t i = 1; i < x.size(); ++i) x[i] = -103.98f + (103.98f - 87.f) * static_cast<float>(i - 1) / 8192.f;
  std::vector<float> fast(x.size()), portable(x.size());
  SoftmaxRow(x.data(), static_cast<int64_t>(x.size()), false, fast.data(), SoftmaxSumKernel::kAvx512F, true);
  SoftmaxRow(x.data(), static_cast<int64_t>(x.size()), false, portable.data(), SoftmaxSumKernel::kAvx512F, false);
  EXPECT_EQ(Bits(fast), Bits(portable));
  int subnormal = 0;
  for (float v : fast) subnormal += v != 0 && std::fpclassify(v) == FP_SUBNORMAL;
  EXPECT_GT(subnormal, 1000);
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
        for (SoftmaxSumKernel kernel : {SoftmaxSumKernel::kFma3, SoftmaxSumKernel::kAvx512F}) {
          std::vector<float> fast(n), portable(n);
          SoftmaxRow(x.data(), n, log, fast.data(), kernel, true);
          SoftmaxRow(x.data(), n, log, portable.data(), kernel, false);
          ASSERT_EQ(Bits(fast), Bits(portable)) << "n " << n << " spread " << spread << " log " << log;
          for (int64_t i = 0; i < n; ++i) {
            const double want = log ? x[i] - max - std::log(sum) : std::exp(x[i] - max) / sum;
            ASSERT_NEAR(fast[i], want, 1e-6 * (1 + std::abs(want))) << "n " << n << " log " << log << " i " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::kernels
