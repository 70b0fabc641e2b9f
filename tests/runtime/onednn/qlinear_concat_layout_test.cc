// QLinearConcat of integer units' channels-last outputs stays channels-last (its
// layout_for_inputs), and the MaxPool and Conv unit after it read it as it is: x -> three
// Conv units (one on the concat's grid, two on grids of their own) -> Concat -> MaxPool, and
// a Conv 1x1 of the concat with the pool as its residual -> output. Every INT8 / UINT8 value
// and the output must be the bytes of the hand-written kernels at the scalar cap (plain NCHW
// throughout), for both activation types and batch sizes 1 and 3.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/engine_tuner.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/runtime/onednn/int8_values.h"
#include "tests/runtime/onednn/square_conv.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

class QLinearConcatLayoutTest : public ::testing::TestWithParam<ir::DataType> {};

TEST_P(QLinearConcatLayoutTest, ChannelsLastConcatGivesTheScalarKernelsBytes) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap";
  const ir::DataType type = GetParam();
  const int zp = type == ir::DataType::kUint8 ? 128 : 0;
  std::mt19937 rng(17);
  for (int64_t n : {1, 3}) {
    const int64_t cin = 8, h = 9, w = 7;
    testing::QdqGraph b;
    ir::Value* x = b.Input("x", {n, cin, h, w}, type, 0.03f, zp);
    auto weights = [&](const std::string& name, int64_t o, int64_t i, int64_t k) {
      return RandomWeights(b, rng, name, o, i, k);
    };
    ir::AttributeMap pad1;
    pad1.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    // Branch channel counts 16, 24 and 5 (not a multiple of anything); the first branch on the
    // concat's own grid (a copy), the others on grids of their own (requantized).
    const float concat_scale = 0.05f;
    ir::Value* b0 =
        b.QuantizeDequantize(b.Op("Conv", {x, weights("w0", 16, cin, 1)}, {n, 16, h, w}), type, concat_scale, zp);
    ir::Value* b1 = b.QuantizeDequantize(b.Op("Conv", {x, weights("w1", 24, cin, 3)}, {n, 24, h, w}, pad1), type, 0.07f,
                                         zp + (type == ir::DataType::kUint8 ? -9 : 5));
    ir::Value* b2 = b.QuantizeDequantize(b.Op("Conv", {x, weights("w2", 5, cin, 1)}, {n, 5, h, w}), type, 0.02f, zp);
    ir::AttributeMap axis;
    axis.Set("axis", int64_t{1});
    ir::Value* cat = b.QuantizeDequantize(b.Op("Concat", {b0, b1, b2}, {n, 45, h, w}, axis), type, concat_scale, zp);
    ir::AttributeMap window;
    window.Set("kernel_shape", std::vector<int64_t>{3, 3});
    window.Set("strides", std::vector<int64_t>{1, 1});
    window.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    ir::Value* pooled = b.QuantizeDequantize(b.Op("MaxPool", {cat}, {n, 45, h, w}, window), type, concat_scale, zp);
    ir::Value* conv = b.Op("Conv", {cat, weights("w3", 45, 45, 1)}, {n, 45, h, w});
    b.Output(b.Op("Add", {conv, pooled}, {n, 45, h, w}), type, 0.06f, zp);

    ir::Tensor xt(type, {n, cin, h, w});
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& v : xt.mutable_values<uint8_t>()) v = static_cast<uint8_t>(byte(rng));
    std::map<std::string, ir::Tensor> want;
    {
      testing::IsaCapGuard guard;
      SetIsaCap(Isa::kScalar);
      QFUSE_ASSERT_OK_AND_ASSIGN(want, RunInt8Values(b.graph(), false, {{"x", xt}}));
    }
    ASSERT_GE(want.size(), 6u);  // three branches, the concat, the pool, the output
    QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunInt8Values(b.graph(), true, {{"x", xt}}, numerics::RequantizeMode::kOnnx,
                                                       EngineTuner::CallsToChoose(2) + 1));
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, t] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_TRUE(got.at(name).BitwiseEqual(t)) << name << " batch " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QLinearConcatLayoutTest, ::testing::Values(ir::DataType::kUint8, ir::DataType::kInt8),
                         [](const ::testing::TestParamInfo<ir::DataType>& info) {
                           return info.param == ir::DataType::kUint8 ? "uint8" : "int8";
                         });

}  // namespace
}  // namespace qfuse::runtime::onednn
