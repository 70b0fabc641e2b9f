// oneDNN's int8 convolutions give qfuse's exact accumulators where int8_conv_engine.h says they
// do. Depthwise units below VNNI run on oneDNN's int8 depthwise kernels with 8-bit weights (one
// product per 32-bit lane, never an int16 pair): oneDNN picks one of those kernels for the
// unit's descriptor (at the AVX2 cap). With VNNI (AVX-512 VNNI, or AVX-VNNI at the avx2_vnni
// cap) oneDNN picks its VNNI kernels, whose vpdpbusd sums never saturate. And worst-case units
// (sources of 255 against weights of 127 and -128, whose u8 x s8 pairs would saturate
// vpmaddubsw's int16 at 64770), depthwise, 1x1 and 3x3, give the bytes of the hand-written
// kernel at the scalar cap, with every engine, under whatever cap the test runs: tools/test.sh
// runs it uncapped and under each lower cap the CPU has (avx2_vnni, avx512, avx2, scalar). So do
// units whose int32 sums pass 2^24, which some oneDNN kernels round through float32.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/onednn/channel_chunks.h"
#include "runtime/onednn/conv_desc.h"
#include "runtime/onednn/int8_conv_engine.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/runtime/onednn/int8_values.h"
#include "tests/runtime/onednn/square_conv.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

TEST(Int8ConvExactTest, OneDnnPicksAnExactInt8DepthwiseKernelBelowVnni) {
  if (!UseOneDnn() || OneDnnHasVnni() || !IsaAllowed(Isa::kAvx2)) {
    GTEST_SKIP() << "needs oneDNN below VNNI (QFUSE_MAX_ISA=avx2 or avx512 on a VNNI machine)";
  }
  ir::Tensor weights(ir::DataType::kInt8, {32, 1, 3, 3});
  EXPECT_TRUE(IsDepthwise(weights, 32));
  EXPECT_FALSE(IsDepthwise(weights, 1));
  EXPECT_TRUE(OneDnnInt8IsExact(ir::DataType::kUint8, weights, 32));
  kernels::linalg::ConvAttrs attrs;
  attrs.group = 32;
  attrs.pads = {1, 1, 1, 1};
  for (int64_t stride : {1, 2}) {
    attrs.strides = {stride, stride};
    QFUSE_ASSERT_OK_AND_ASSIGN(ConvDims d, ResolveConvDims(attrs, {2, 32, 14, 14}, weights.dims()));
    for (bool zero_point : {false, true}) {
      dnnl::primitive_attr attr;
      if (zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      const std::string impl =
          NhwcConvDesc({2, 32, 14, 14}, d, dnnl::memory::data_type::u8, dnnl::memory::data_type::s8,
                       dnnl::memory::data_type::s32, attr, dnnl::memory::data_type::undef)
              .impl_info_str();
      EXPECT_TRUE(IsExactInt8DepthwiseImplementation(impl)) << impl << " stride " << stride;
    }
  }
  EXPECT_FALSE(IsExactInt8DepthwiseImplementation("gemm:jit"));
  EXPECT_FALSE(IsExactInt8DepthwiseImplementation("brg:avx2"));
}

// The kernels' names under the cap: VNNI (or AMX) ones exactly when OneDnnHasVnni says so, and
// never at the avx512 cap (AVX-512 without VNNI, whatever this CPU has).
TEST(Int8ConvExactTest, OneDnnRunsVnniKernelsExactlyWhenItSaysSo) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap";
  for (int64_t kernel : {1, 3}) {
    ir::Tensor weights(ir::DataType::kInt8, {64, 32, kernel, kernel});
    for (int8_t& w : weights.mutable_values<int8_t>()) w = 127;  // 8-bit: exact below VNNI only by the split
    kernels::linalg::ConvAttrs attrs;
    attrs.pads = std::vector<int64_t>(4, kernel / 2);
    attrs.strides = {1, 1};
    QFUSE_ASSERT_OK_AND_ASSIGN(ConvDims d, ResolveConvDims(attrs, {2, 32, 14, 14}, weights.dims()));
    const std::string impl =
        NhwcConvDesc({2, 32, 14, 14}, d, dnnl::memory::data_type::u8, dnnl::memory::data_type::s8,
                     dnnl::memory::data_type::s32, dnnl::primitive_attr(), dnnl::memory::data_type::undef)
            .impl_info_str();
    const bool vnni_kernel = impl.find("vnni") != std::string::npos || impl.find("amx") != std::string::npos;
    EXPECT_EQ(vnni_kernel, OneDnnHasVnni()) << impl << " at cap " << IsaName(MaxIsa());
    // With VNNI any int8 weights are exact, and below it only 7-bit ones.
    EXPECT_EQ(OneDnnInt8IsExact(ir::DataType::kUint8, weights), OneDnnHasVnni()) << impl;
    if (MaxIsa() == Isa::kAvx512 || MaxIsa() <= Isa::kAvx2) EXPECT_FALSE(OneDnnHasVnni());
  }
}

// A unit whose int32 sums pass 2^24, where oneDNN's jit kernels would round them
// through float32 (int8_conv_engine.h's OneDnnInt32SumsAreExact): every image byte at the top
// of its range (top - zero point odd) against weights of `weight` (the first tap of channel o is
// 1 + o, so half the channels' sums are odd, which float32 cannot hold above 2^24), and a bias
// that brings the interior sums back to about 0, so that the output (multiplier 1, zero point
// 128) shows every unit of the sums. Under the kOneDnn engine the channel ranges must run
// (channel_chunks.h), except where brgconv's sums are exact (uint8, no zero point, AVX-512 VNNI).
void ExpectLargeSumsGiveTheScalarKernelsBytes(int64_t kernel, int64_t cin, int8_t weight, ir::DataType type,
                                              int x_zp) {
  const int64_t n = 2, c = 16, size = 6, taps = cin * kernel * kernel;
  testing::QdqGraph b;
  ir::Value* x = b.Input("x", {n, cin, size, size}, type, 0.02f, x_zp);
  std::vector<int8_t> w(static_cast<size_t>(c * taps), weight);
  for (int64_t o = 0; o < c; ++o) w[o * taps] = static_cast<int8_t>(1 + o);
  const int top = type == ir::DataType::kUint8 ? 255 : 127;
  std::vector<int32_t> bias(c);
  for (int64_t o = 0; o < c; ++o) {
    int64_t interior = 0;  // the sum at a pixel whose window lies inside the image
    for (int64_t t = 0; t < taps; ++t) interior += int64_t{top - x_zp} * w[o * taps + t];
    bias[o] = static_cast<int32_t>(-interior + 3 * o);
  }
  std::vector<float> w_scales(c, 0.001f), bias_scales(c, 0.02f * 0.001f);
  std::vector<int64_t> out_dims;
  ir::Value* y = AddSquareConv(b, x, {n, cin, c, size, kernel, 1, 1}, w, w_scales, bias, bias_scales, &out_dims);
  b.Output(y, ir::DataType::kUint8, 0.02f * 0.001f, 128);
  // Image 0: every byte at the top; image 1: the top but one byte in seven at the bottom.
  ir::Tensor source(type, {n, cin, size, size});
  auto bytes = source.mutable_values<uint8_t>();
  const int64_t image = cin * size * size;
  for (int64_t i = 0; i < static_cast<int64_t>(bytes.size()); ++i) {
    const bool low = i >= image && i % 7 == 0;
    bytes[i] = static_cast<uint8_t>(low ? (type == ir::DataType::kUint8 ? 0 : -128) : top);
  }
  const std::vector<NamedTensor> inputs = {{"x", source}};
  std::map<std::string, ir::Tensor> want;
  {
    testing::IsaCapGuard guard;
    SetIsaCap(Isa::kScalar);
    QFUSE_ASSERT_OK_AND_ASSIGN(want, RunInt8Values(b.graph(), false, inputs));
  }
  // The interior sums do reach the output: some bytes strictly inside (0, 255).
  const auto out = want.begin()->second.values<uint8_t>();
  ASSERT_TRUE(std::any_of(out.begin(), out.end(), [](uint8_t v) { return v > 0 && v < 255; }));
  const bool brgconv_exact = type == ir::DataType::kUint8 && x_zp == 0 && IsaAllowed(Isa::kAvx512Vnni);
  for (Int8ConvEngine engine : {Int8ConvEngine::kAuto, Int8ConvEngine::kOneDnn, Int8ConvEngine::kTiles}) {
    SetInt8ConvEngine(engine);
    const int runs = engine == Int8ConvEngine::kAuto ? 7 : 1;
    const int64_t chunk_sets = ChannelChunkSets();
    absl::StatusOr<std::map<std::string, ir::Tensor>> got =
        RunInt8Values(b.graph(), true, inputs, numerics::RequantizeMode::kOnnx, runs);
    SetInt8ConvEngine(Int8ConvEngine::kAuto);
    if (engine == Int8ConvEngine::kOneDnn) {
      EXPECT_EQ(ChannelChunkSets() > chunk_sets, !brgconv_exact)
          << "kernel " << kernel << " type " << ir::DataTypeName(type) << " zero point " << x_zp;
    }
    ASSERT_TRUE(got.ok()) << got.status() << " engine " << static_cast<int>(engine) << " kernel " << kernel
                          << " type " << ir::DataTypeName(type) << " zero point " << x_zp;
    for (const auto& [name, t] : want) {
      ASSERT_TRUE(got->count(name)) << name;
      EXPECT_TRUE(got->at(name).BitwiseEqual(t))
          << name << " engine " << static_cast<int>(engine) << " kernel " << kernel << " channels " << cin << " type "
          << ir::DataTypeName(type) << " zero point " << x_zp << " at cap " << IsaName(MaxIsa());
    }
  }
}

TEST(Int8ConvExactTest, SumsAbove2To24GiveTheScalarKernelsBytes) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap";
  // 3x3 with 512 input channels and weights of 64: sums up to 255 * 64 * 4608 = 7.5e7 (5 ranges);
  // 1x1 with 2048 and weights of 127: 6.6e7 (4 ranges; 127 * 127 * 2048 = 3.3e7 for an int8
  // source without zero point).
  for (const auto& [kernel, cin, weight] : std::vector<std::tuple<int64_t, int64_t, int8_t>>{{3, 512, 64},
                                                                                             {1, 2048, 127}}) {
    ExpectLargeSumsGiveTheScalarKernelsBytes(kernel, cin, weight, ir::DataType::kUint8, 0);
    ExpectLargeSumsGiveTheScalarKernelsBytes(kernel, cin, weight, ir::DataType::kUint8, 2);  // a source zero point
    ExpectLargeSumsGiveTheScalarKernelsBytes(kernel, cin, weight, ir::DataType::kInt8, -128);
    ExpectLargeSumsGiveTheScalarKernelsBytes(kernel, cin, weight, ir::DataType::kInt8, 0);
  }
}

TEST(Int8ConvExactTest, Int32SumsRuleByImplementation) {
  const int64_t fits = (int64_t{1} << 24) / 255, fits_int8 = (int64_t{1} << 24) / 383;
  for (const char* impl : {"brgconv_1x1:avx512_core_vnni", "brgconv:avx512_core_vnni"}) {
    EXPECT_TRUE(OneDnnInt32SumsAreExact(impl, 1 << 20, false, false)) << impl;  // uint8, no zero point
    EXPECT_FALSE(OneDnnInt32SumsAreExact(impl, fits + 1, false, true)) << impl;
    EXPECT_FALSE(OneDnnInt32SumsAreExact(impl, fits_int8 + 1, true, false)) << impl;
    EXPECT_TRUE(OneDnnInt32SumsAreExact(impl, fits, false, true)) << impl;
  }
  for (const char* impl : {"jit_uni_int8:avx2_vnni", "jit_int8:avx512_core_vnni", "jit_uni_int8_1x1:avx2",
                           "jit_int8_1x1:avx512_core", "gemm:jit", "ref:any"}) {
    EXPECT_TRUE(OneDnnInt32SumsAreExact(impl, fits, false, true)) << impl;
    EXPECT_FALSE(OneDnnInt32SumsAreExact(impl, fits + 1, false, false)) << impl;
    EXPECT_TRUE(OneDnnInt32SumsAreExact(impl, fits_int8, true, false)) << impl;
    EXPECT_FALSE(OneDnnInt32SumsAreExact(impl, fits_int8 + 1, true, false)) << impl;
  }
  ir::Tensor weights(ir::DataType::kInt8, {2, 1, 1, 3});
  auto v = weights.mutable_values<int8_t>();
  const int8_t values[] = {-128, 1, 2, 100, -100, 0};
  std::copy(std::begin(values), std::end(values), v.begin());
  EXPECT_EQ(MaxChannelSignedWeightSum(weights), 128);  // channel 0: 3 and 128; channel 1: 100 and 100
}

// A unit of geometry `conv` (cin = cout = group for a depthwise one) on worst-case sources and
// weights gives the scalar kernels' bytes with every engine.
void ExpectSaturatingPairsGiveTheScalarKernelsBytes(const SquareConv& conv) {
  const int64_t n = conv.n, cin = conv.cin, c = conv.cout, size = conv.size;
  const int64_t taps = cin / conv.group * conv.kernel * conv.kernel;
  std::mt19937 rng(5);
  for (ir::DataType type : {ir::DataType::kUint8, ir::DataType::kInt8}) {
    // Zero point at the bottom of the range, so that 255 (uint8) / 127 (int8) is far from it.
    const int x_zp = type == ir::DataType::kUint8 ? 0 : -128;
    testing::QdqGraph b;
    ir::Value* x = b.Input("x", {n, cin, size, size}, type, 0.02f, x_zp);
    // Channel 0: all 127; channel 1: all -128; the rest alternate or are random.
    std::vector<int8_t> w(static_cast<size_t>(c * taps));
    std::uniform_int_distribution<int> any(-128, 127);
    for (int64_t o = 0; o < c; ++o) {
      for (int64_t t = 0; t < taps; ++t) {
        int8_t& e = w[o * taps + t];
        e = o == 0 ? 127 : o == 1 ? -128 : o == 2 ? (t % 2 == 0 ? 127 : -128) : static_cast<int8_t>(any(rng));
      }
    }
    std::vector<float> w_scales(c, 0.001f), bias_scales(c, 0.02f * 0.001f);
    std::vector<int32_t> bias(c, 0);
    std::vector<int64_t> out_dims;
    ir::Value* y = AddSquareConv(b, x, conv, w, w_scales, bias, bias_scales, &out_dims);
    b.Output(b.Op("Relu", {y}, out_dims), ir::DataType::kUint8, 0.05f, 0);
    // Image 0: every byte at the top of the range; image 1: random; image 2: alternating.
    ir::Tensor source(type, {n, cin, size, size});
    auto bytes = source.mutable_values<uint8_t>();
    const uint8_t top = type == ir::DataType::kUint8 ? 255 : 127;
    std::uniform_int_distribution<int> byte(0, 255);
    for (int64_t i = 0; i < static_cast<int64_t>(bytes.size()); ++i) {
      const int64_t image = i / (cin * size * size);
      bytes[i] = image == 0 ? top : image == 1 ? static_cast<uint8_t>(byte(rng)) : (i % 2 == 0 ? top : uint8_t{0});
    }
    const std::vector<NamedTensor> inputs = {{"x", source}};
    std::map<std::string, ir::Tensor> want;
    {
      testing::IsaCapGuard guard;
      SetIsaCap(Isa::kScalar);
      QFUSE_ASSERT_OK_AND_ASSIGN(want, RunInt8Values(b.graph(), false, inputs));
    }
    for (Int8ConvEngine engine : {Int8ConvEngine::kAuto, Int8ConvEngine::kOneDnn, Int8ConvEngine::kTiles}) {
      SetInt8ConvEngine(engine);
      const int runs = engine == Int8ConvEngine::kAuto ? 7 : 1;  // kAuto: both engines, then the choice
      absl::StatusOr<std::map<std::string, ir::Tensor>> got =
          RunInt8Values(b.graph(), true, inputs, numerics::RequantizeMode::kOnnx, runs);
      SetInt8ConvEngine(Int8ConvEngine::kAuto);
      QFUSE_ASSERT_OK(got.status());
      for (const auto& [name, t] : want) {
        ASSERT_TRUE(got->count(name)) << name;
        EXPECT_TRUE(got->at(name).BitwiseEqual(t))
            << name << " engine " << static_cast<int>(engine) << " type " << ir::DataTypeName(type) << " kernel "
            << conv.kernel << " group " << conv.group << " at cap " << IsaName(MaxIsa());
      }
    }
  }
}

TEST(Int8ConvExactTest, SaturatingPairsGiveTheScalarKernelsBytes) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap";
  ExpectSaturatingPairsGiveTheScalarKernelsBytes({3, 24, 24, 10, 3, 1, 24});  // depthwise
  // Dense units: 1x1 and 3x3, 32 input channels (the largest sums stay below 2^24, so the fused
  // output stage qualifies too).
  ExpectSaturatingPairsGiveTheScalarKernelsBytes({3, 32, 24, 10, 1, 1, 1});
  ExpectSaturatingPairsGiveTheScalarKernelsBytes({3, 32, 24, 10, 3, 1, 1});
}

}  // namespace
}  // namespace qfuse::runtime::onednn
