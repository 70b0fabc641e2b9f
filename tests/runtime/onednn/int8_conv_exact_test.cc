// oneDNN's int8 convolutions give qfuse's exact accumulators where int8_conv_engine.h says they
// do. Depthwise units below VNNI run on oneDNN's int8 depthwise kernels with 8-bit weights (one
// product per 32-bit lane, never an int16 pair): oneDNN picks one of those kernels for the
// unit's descriptor (at the AVX2 cap). With VNNI (AVX-512 VNNI, or AVX-VNNI at the avx2_vnni
// cap) oneDNN picks its VNNI kernels, whose vpdpbusd sums never saturate. And worst-case units
// (sources of 255 against weights of 127 and -128, whose u8 x s8 pairs would saturate
// vpmaddubsw's int16 at 64770), depthwise, 1x1 and 3x3, give the bytes of the hand-written
// kernel at the scalar cap, with every engine, under whatever cap the test runs: tools/test.sh
// runs it uncapped and under each lower cap the CPU has (avx2_vnni, avx512, avx2, scalar).
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
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

// The kernels' names under the cap: VNNI ones exactly when OneDnnHasVnni says so.
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
    EXPECT_EQ(impl.find("vnni") != std::string::npos, OneDnnHasVnni()) << impl << " at cap " << IsaName(MaxIsa());
    // With VNNI any int8 weights are exact, and below it only 7-bit ones.
    EXPECT_EQ(OneDnnInt8IsExact(ir::DataType::kUint8, weights), OneDnnHasVnni()) << impl;
  }
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
