// The oneDNN pooling kernels against the hand-written ones (checked against ONNX's node
// tests) on random inputs: a Conv (blocked output) feeding MaxPool, AveragePool and the
// global pools, over ceil_mode, padding, count_include_pad and channel counts that do not
// fill a block; outputs and observed values compared in plain layout. And the integer
// graph's MaxPool between two integer units (channels-last bytes), and its GlobalAveragePool
// after one: every byte the same. The integer MaxPool runs both of its engines (oneDNN and
// qfuse's channels-last rows, kernels/quant/nhwc_max_pool.h) before its tuned choice.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/engine_tuner.h"
#include "runtime/executor.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/runtime/onednn/engine_compare.h"
#include "tests/runtime/onednn/int8_values.h"
#include "tests/runtime/onednn/square_conv.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

using testing::GraphBuilder;

struct PoolCase {
  int64_t channels, size, kernel, stride, pad;
  bool ceil_mode, count_include_pad;
};

class OneDnnPoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(OneDnnPoolTest, EqualsHandWrittenKernels) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const PoolCase& c = GetParam();
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 3, c.size, c.size + 2});
  ir::Value* conv = b.Op("Conv", {x, b.Random("w", {c.channels, 3, 3, 3}), b.Random("bias", {c.channels})}, "conv",
                         {-1, c.channels, c.size, c.size + 2},
                         GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  const std::vector<int64_t> pads = {c.pad, c.pad, c.pad, c.pad};
  const std::vector<int64_t> window = {c.kernel, c.kernel}, strides = {c.stride, c.stride};
  ir::Value* max = b.Op("MaxPool", {conv}, "max", {-1, c.channels, -1, -1},
                        GraphBuilder::Attrs({{"kernel_shape", window},
                                             {"strides", strides},
                                             {"pads", pads},
                                             {"ceil_mode", int64_t{c.ceil_mode}}}));
  ir::Value* avg = b.Op("AveragePool", {conv}, "avg", {-1, c.channels, -1, -1},
                        GraphBuilder::Attrs({{"kernel_shape", window},
                                             {"strides", strides},
                                             {"pads", pads},
                                             {"count_include_pad", int64_t{c.count_include_pad}}}));
  b.Output(max);
  b.Output(avg);
  b.Output(b.Op("GlobalAveragePool", {max}, "gap", {-1, c.channels, 1, 1}));
  b.Output(b.Op("GlobalMaxPool", {avg}, "gmp", {-1, c.channels, 1, 1}));
  for (int64_t batch : {1, 2}) ExpectEnginesAgree(b.graph(), batch);
}

INSTANTIATE_TEST_SUITE_P(Pools, OneDnnPoolTest,
                         ::testing::Values(PoolCase{16, 9, 3, 2, 1, false, false},  // the ResNet stem pool
                                           PoolCase{13, 8, 3, 2, 0, true, true},    // ceil mode, partial block
                                           PoolCase{24, 7, 2, 2, 0, false, false},
                                           PoolCase{40, 6, 3, 1, 1, true, true}),
                         [](const ::testing::TestParamInfo<PoolCase>& info) {
                           const PoolCase& c = info.param;
                           return absl::StrCat("c", c.channels, "_k", c.kernel, "_s", c.stride, "_p", c.pad,
                                               c.ceil_mode ? "_ceil" : "", c.count_include_pad ? "_incpad" : "");
                         });

// A FLOAT MaxPool whose input is plain (a graph input here; a Concat's output in GoogLeNet)
// is blocked for oneDNN first: the same floats, bit for bit, as the hand-written kernel.
TEST_P(OneDnnPoolTest, MaxPoolOfAPlainInputIsExact) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const PoolCase& c = GetParam();
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, c.channels, c.size, c.size + 1});
  const std::vector<int64_t> pads = {c.pad, c.pad, c.pad, c.pad};
  b.Output(b.Op("MaxPool", {x}, "max", {-1, c.channels, -1, -1},
                GraphBuilder::Attrs({{"kernel_shape", std::vector<int64_t>{c.kernel, c.kernel}},
                                     {"strides", std::vector<int64_t>{c.stride, c.stride}},
                                     {"pads", pads},
                                     {"ceil_mode", int64_t{c.ceil_mode}}})));
  for (int64_t batch : {1, 3}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunWith(b.graph(), false, batch));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunWith(b.graph(), true, batch));
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want) EXPECT_TRUE(got.at(name).BitwiseEqual(w)) << name << " batch " << batch;
  }
}

class OneDnnInt8MaxPoolTest : public ::testing::TestWithParam<std::tuple<PoolCase, ir::DataType>> {};

// x -> Conv 3x3 unit -> MaxPool -> Conv 1x1 unit -> y, all requantized: the integer runtime
// runs the pool between two channels-last units.
TEST_P(OneDnnInt8MaxPoolTest, EqualsHandWrittenKernelsByteForByte) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const auto& [c, type] = GetParam();
  std::mt19937 rng(11);
  const int64_t n = 2, cin = 8, h = c.size, w = c.size + 3;
  testing::QdqGraph b;
  ir::Value* x = b.Input("x", {n, cin, h, w}, type, 0.03f, type == ir::DataType::kUint8 ? 5 : -3);
  auto weights = [&](const std::string& name, int64_t o, int64_t i, int64_t k) {
    return RandomWeights(b, rng, name, o, i, k);
  };
  ir::AttributeMap pad1;
  pad1.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Value* conv = b.Op("Conv", {x, weights("w1", c.channels, cin, 3)}, {n, c.channels, h, w}, pad1);
  const int zp = type == ir::DataType::kUint8 ? 131 : 3;
  ir::Value* stage = b.QuantizeDequantize(conv, type, 0.047f, zp);
  ir::AttributeMap window;
  window.Set("kernel_shape", std::vector<int64_t>{c.kernel, c.kernel});
  window.Set("strides", std::vector<int64_t>{c.stride, c.stride});
  window.Set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
  window.Set("ceil_mode", int64_t{c.ceil_mode});
  ir::Value* pooled = b.QuantizeDequantize(b.Op("MaxPool", {stage}, {n, c.channels, -1, -1}, window), type, 0.047f, zp);
  b.Output(b.Op("Conv", {pooled, weights("w2", 16, c.channels, 1)}, {n, 16, -1, -1}), type, 0.05f, zp);

  ir::Tensor xt(type, {n, cin, h, w});
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& v : xt.mutable_values<uint8_t>()) v = static_cast<uint8_t>(byte(rng));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunInt8Values(b.graph(), false, {{"x", xt}}));
  // Runs enough times for the pool to time oneDNN against qfuse's rows and then run its
  // choice (engine_tuner.h); every run must give the first run's bytes.
  QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunInt8Values(b.graph(), true, {{"x", xt}}, numerics::RequantizeMode::kOnnx,
                                                     EngineTuner::CallsToChoose(2) + 1));
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GE(want.size(), 3u);  // the first unit's output, the pool's, the output
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(got.at(name).BitwiseEqual(t)) << name;
  }
}

// The integer MaxPool of a plain input (a graph input here; a QLinearConcat's output in
// GoogLeNet) takes the channels-last layout first: every byte as the hand-written kernel's.
TEST_P(OneDnnInt8MaxPoolTest, PlainInputEqualsHandWrittenKernelsByteForByte) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const auto& [c, type] = GetParam();
  std::mt19937 rng(13);
  const int64_t n = 2, h = c.size, w = c.size + 2;
  const int zp = type == ir::DataType::kUint8 ? 131 : 3;
  testing::QdqGraph b;
  ir::Value* x = b.Input("x", {n, c.channels, h, w}, type, 0.047f, zp);
  ir::AttributeMap window;
  window.Set("kernel_shape", std::vector<int64_t>{c.kernel, c.kernel});
  window.Set("strides", std::vector<int64_t>{c.stride, c.stride});
  window.Set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
  window.Set("ceil_mode", int64_t{c.ceil_mode});
  b.Output(b.Op("MaxPool", {x}, {n, c.channels, -1, -1}, window), type, 0.047f, zp);
  ir::Tensor xt(type, {n, c.channels, h, w});
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& v : xt.mutable_values<uint8_t>()) v = static_cast<uint8_t>(byte(rng));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunInt8Values(b.graph(), false, {{"x", xt}}));
  // Runs enough times for the pool to time oneDNN against qfuse's rows and then run its
  // choice (engine_tuner.h); every run must give the first run's bytes.
  QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunInt8Values(b.graph(), true, {{"x", xt}}, numerics::RequantizeMode::kOnnx,
                                                     EngineTuner::CallsToChoose(2) + 1));
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) EXPECT_TRUE(got.at(name).BitwiseEqual(t)) << name;
}

// A non-square window and stride with uneven pads on the integer path (both pool engines, then
// the tuned choice): the pads' begin / end and the two axes must reach qfuse's rows as ONNX
// orders them. Also checks that the pool was tuned.
TEST(OneDnnInt8MaxPoolShapeTest, NonSquareWindowUnevenPads) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  for (ir::DataType type : {ir::DataType::kUint8, ir::DataType::kInt8}) {
    std::mt19937 rng(19);
    const int64_t n = 2, c = 40, h = 11, w = 9;
    const int zp = type == ir::DataType::kUint8 ? 131 : 3;
    testing::QdqGraph b;
    ir::Value* x = b.Input("x", {n, 8, h, w}, type, 0.03f, zp);
    ir::Value* conv = b.QuantizeDequantize(b.Op("Conv", {x, RandomWeights(b, rng, "w1", c, 8, 1)}, {n, c, h, w}),
                                           type, 0.047f, zp);
    ir::AttributeMap window;
    window.Set("kernel_shape", std::vector<int64_t>{3, 2});
    window.Set("strides", std::vector<int64_t>{2, 1});
    window.Set("pads", std::vector<int64_t>{1, 0, 0, 1});  // top 1, left 0, bottom 0, right 1
    b.Output(b.Op("MaxPool", {conv}, {n, c, -1, -1}, window), type, 0.047f, zp);
    ir::Tensor xt(type, {n, 8, h, w});
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& v : xt.mutable_values<uint8_t>()) v = static_cast<uint8_t>(byte(rng));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunInt8Values(b.graph(), false, {{"x", xt}}));
    const int64_t choices_before = EngineTuner::ChoicesMade();
    QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunInt8Values(b.graph(), true, {{"x", xt}}, numerics::RequantizeMode::kOnnx,
                                                       EngineTuner::CallsToChoose(2) + 1));
    EXPECT_GT(EngineTuner::ChoicesMade(), choices_before) << "the pool (and the unit) were not tuned";
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, t] : want) EXPECT_TRUE(got.at(name).BitwiseEqual(t)) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Pools, OneDnnInt8MaxPoolTest,
                         ::testing::Combine(::testing::Values(PoolCase{16, 9, 3, 2, 1, false, false},
                                                              PoolCase{13, 8, 3, 2, 0, true, false},
                                                              PoolCase{40, 6, 2, 2, 0, false, false},
                                                              PoolCase{64, 7, 3, 1, 1, true, false}),
                                            ::testing::Values(ir::DataType::kUint8, ir::DataType::kInt8)),
                         [](const ::testing::TestParamInfo<std::tuple<PoolCase, ir::DataType>>& info) {
                           const PoolCase& c = std::get<0>(info.param);
                           return absl::StrCat("c", c.channels, "_k", c.kernel, "_s", c.stride, "_p", c.pad,
                                               c.ceil_mode ? "_ceil" : "",
                                               std::get<1>(info.param) == ir::DataType::kUint8 ? "_u8" : "_s8");
                         });

// x -> Conv 3x3 unit -> GlobalAveragePool, requantized: the integer pool reads the unit's
// channels-last bytes directly; with oneDNN off it reads plain NCHW. Same bytes.
class OneDnnInt8GlobalPoolTest : public ::testing::TestWithParam<std::tuple<int64_t, ir::DataType>> {};

TEST_P(OneDnnInt8GlobalPoolTest, ChannelsLastEqualsPlain) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const auto& [channels, type] = GetParam();
  std::mt19937 rng(5);
  const int64_t n = 3, cin = 8, h = 7, w = 9;
  testing::QdqGraph b;
  ir::Value* x = b.Input("x", {n, cin, h, w}, type, 0.03f, type == ir::DataType::kUint8 ? 5 : -3);
  std::uniform_int_distribution<int> w8(-127, 127);
  std::vector<int8_t> v(channels * cin * 9);
  for (int8_t& e : v) e = static_cast<int8_t>(w8(rng));
  ir::AttributeMap pad1;
  pad1.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Value* conv = b.Op("Conv", {x, b.Weights("w", {channels, cin, 3, 3}, v, std::vector<float>(channels, 0.004f), 0)},
                         {n, channels, h, w}, pad1);
  const int zp = type == ir::DataType::kUint8 ? 131 : 3;
  ir::Value* stage = b.QuantizeDequantize(conv, type, 0.047f, zp);
  b.Output(b.Op("GlobalAveragePool", {stage}, {n, channels, 1, 1}), type, 0.011f, zp);

  ir::Tensor xt(type, {n, cin, h, w});
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& e : xt.mutable_values<uint8_t>()) e = static_cast<uint8_t>(byte(rng));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunInt8Values(b.graph(), false, {{"x", xt}}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunInt8Values(b.graph(), true, {{"x", xt}}));
  ASSERT_EQ(got.size(), want.size());
  ASSERT_TRUE(want.count("output:y"));
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(got.at(name).BitwiseEqual(t)) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Pools, OneDnnInt8GlobalPoolTest,
                         ::testing::Combine(::testing::Values(13, 64, 100),
                                            ::testing::Values(ir::DataType::kUint8, ir::DataType::kInt8)),
                         [](const ::testing::TestParamInfo<std::tuple<int64_t, ir::DataType>>& info) {
                           return absl::StrCat("c", std::get<0>(info.param),
                                               std::get<1>(info.param) == ir::DataType::kUint8 ? "_u8" : "_s8");
                         });

}  // namespace
}  // namespace qfuse::runtime::onednn
