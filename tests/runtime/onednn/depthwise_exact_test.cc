// Depthwise integer conv units below VNNI run on oneDNN's int8 depthwise kernels with 8-bit
// weights (int8_conv_engine.h: one product per 32-bit lane, never an int16 pair). Checked two
// ways: oneDNN picks one of those kernels for the unit's descriptor (at the AVX2 cap), and a
// worst-case unit (sources of 255 against weights of 127 and -128, whose u8 x s8 pairs would
// saturate vpmaddubsw's int16 at 64770) gives the bytes of the hand-written kernel at the scalar
// cap, with every engine. Under the AVX-512 VNNI cap the same comparison runs on vpdpbusd.
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

TEST(DepthwiseExactTest, OneDnnPicksAnExactInt8DepthwiseKernelBelowVnni) {
  if (!UseOneDnn() || OneDnnHasVnni() || !IsaAllowed(Isa::kAvx2)) {
    GTEST_SKIP() << "needs oneDNN below VNNI (QFUSE_MAX_ISA=avx2 on a VNNI machine)";
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
      const std::string impl = NhwcConvDesc({2, 32, 14, 14}, d, dnnl::memory::data_type::u8,
                                            dnnl::memory::data_type::s8, dnnl::memory::data_type::s32, attr,
                                            dnnl::memory::data_type::undef)
                                   .impl_info_str();
      EXPECT_TRUE(IsExactInt8DepthwiseImplementation(impl)) << impl << " stride " << stride;
    }
  }
  EXPECT_FALSE(IsExactInt8DepthwiseImplementation("gemm:jit"));
  EXPECT_FALSE(IsExactInt8DepthwiseImplementation("brg:avx2"));
}

TEST(DepthwiseExactTest, SaturatingPairsGiveTheScalarKernelsBytes) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap";
  const int64_t n = 3, c = 24, size = 10;
  std::mt19937 rng(5);
  for (ir::DataType type : {ir::DataType::kUint8, ir::DataType::kInt8}) {
    // Zero point at the bottom of the range, so that 255 (uint8) / 127 (int8) is far from it.
    const int x_zp = type == ir::DataType::kUint8 ? 0 : -128;
    testing::QdqGraph b;
    ir::Value* x = b.Input("x", {n, c, size, size}, type, 0.02f, x_zp);
    // Channel 0: all 127; channel 1: all -128; the rest alternate or are random.
    std::vector<int8_t> w(static_cast<size_t>(c * 9));
    std::uniform_int_distribution<int> any(-128, 127);
    for (int64_t o = 0; o < c; ++o) {
      for (int64_t t = 0; t < 9; ++t) {
        int8_t& e = w[o * 9 + t];
        e = o == 0 ? 127 : o == 1 ? -128 : o == 2 ? (t % 2 == 0 ? 127 : -128) : static_cast<int8_t>(any(rng));
      }
    }
    std::vector<float> w_scales(c, 0.001f), bias_scales(c, 0.02f * 0.001f);
    std::vector<int32_t> bias(c, 0);
    std::vector<int64_t> out_dims;
    ir::Value* y = AddSquareConv(b, x, {n, c, c, size, 3, 1, c}, w, w_scales, bias, bias_scales, &out_dims);
    b.Output(b.Op("Relu", {y}, out_dims), ir::DataType::kUint8, 0.05f, 0);
    // Image 0: every byte at the top of the range; image 1: random; image 2: alternating.
    ir::Tensor source(type, {n, c, size, size});
    auto bytes = source.mutable_values<uint8_t>();
    const uint8_t top = type == ir::DataType::kUint8 ? 255 : 127;
    std::uniform_int_distribution<int> byte(0, 255);
    for (int64_t i = 0; i < static_cast<int64_t>(bytes.size()); ++i) {
      const int64_t image = i / (c * size * size);
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
      absl::StatusOr<std::map<std::string, ir::Tensor>> got = RunInt8Values(b.graph(), true, inputs,
                                                                            numerics::RequantizeMode::kOnnx, runs);
      SetInt8ConvEngine(Int8ConvEngine::kAuto);
      QFUSE_ASSERT_OK(got.status());
      for (const auto& [name, t] : want) {
        ASSERT_TRUE(got->count(name)) << name;
        EXPECT_TRUE(got->at(name).BitwiseEqual(t))
            << name << " engine " << static_cast<int>(engine) << " type " << ir::DataTypeName(type);
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::onednn
