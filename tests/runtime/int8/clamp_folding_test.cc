// The lowering's clamp folding (runtime/int8/qdq_lowering.h): a requantizing Relu / Clip
// after an integer unit runs inside the unit as a byte map after its output stage. The folded
// graph must give the bytes of the unfolded one (unit, then QLinearClamp) on every kernel
// (oneDNN or qfuse's channels-last kernels, the hand-written NCHW kernel), at the scalar and
// every vector ISA cap, in both requantization modes: on hand-built units (pointwise, dense
// 3x3, depthwise; channel counts with and without vector tails; int8 / uint8 on either side;
// Relu, Relu6 and an asymmetric Clip) and on the sample models at level bn.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

using ir::DataType;
using ir::Value;
using testing::QdqGraph;

// Every INT8/UINT8 value and every output of one run, by name, and the op types that ran.
struct Run {
  std::map<std::string, ir::Tensor> values;
  std::map<std::string, int> ops;
};

absl::StatusOr<Run> RunGraph(const ir::Graph& graph, bool fold, numerics::RequantizeMode mode,
                             const std::vector<NamedTensor>& inputs) {
  ExecutorOptions options;
  options.requantize_mode = mode;
  options.fold_clamps = fold;
  QFUSE_ASSIGN_OR_RETURN(auto exec, Executor::Create(graph, options));
  Run r;
  for (const ir::Node* n : exec->graph().nodes()) {
    ++r.ops[n->op_type()];
    const ir::Node* producer = n->input(0) == nullptr ? nullptr : n->input(0)->producer();
    if (n->op_type() == "QLinearClamp" && producer != nullptr && producer->op_type() != "QLinearClamp" &&
        n->input(0)->uses().size() == 1) {
      ++r.ops["foldable QLinearClamp"];
    }
  }
  RunOptions run;
  run.observer = [&](const ir::Value& v, const ir::Tensor& t) {
    if (t.dtype() == DataType::kInt8 || t.dtype() == DataType::kUint8) r.values.emplace(v.name(), t);
  };
  QFUSE_ASSIGN_OR_RETURN(std::vector<NamedTensor> outputs, exec->Run(inputs, run));
  for (NamedTensor& o : outputs) r.values.emplace("output:" + o.name, std::move(o.tensor));
  return r;
}

// Runs `graph` folded and unfolded under every cap and engine; every value the folded run
// produced must equal the unfolded run's.
void ExpectFoldingKeepsTheBytes(const ir::Graph& graph, const std::vector<NamedTensor>& inputs,
                                const std::string& what) {
  testing::IsaCapGuard guard;
  const Isa start = MaxIsa();
  std::vector<Isa> caps = {Isa::kScalar};
  if (start >= Isa::kAvx2) caps.push_back(Isa::kAvx2);
  if (start > Isa::kAvx2) caps.push_back(start);
  for (Isa cap : caps) {
    SetIsaCap(cap);
    for (bool onednn : {true, false}) {
      if (onednn && cap == Isa::kScalar) continue;  // oneDNN needs AVX2 (the same run as without)
      onednn::SetUseOneDnn(onednn);
      for (auto mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
        absl::StatusOr<Run> folded = RunGraph(graph, true, mode, inputs);
        absl::StatusOr<Run> separate = RunGraph(graph, false, mode, inputs);
        onednn::SetUseOneDnn(true);
        ASSERT_TRUE(folded.ok()) << folded.status();
        ASSERT_TRUE(separate.ok()) << separate.status();
        // Every clamp after a unit, an add or a multiply (the sole reader of its input).
        const int clamps = separate->ops["foldable QLinearClamp"];
        ASSERT_GT(clamps, 0) << what << ": nothing to fold";
        EXPECT_EQ(folded->ops["QLinearClamp"], separate->ops["QLinearClamp"] - clamps) << what;
        EXPECT_EQ(folded->ops["QLinearUnit"], separate->ops["QLinearUnit"]) << what;
        int compared = 0;
        for (const auto& [name, t] : folded->values) {
          auto it = separate->values.find(name);
          ASSERT_NE(it, separate->values.end()) << what << ": " << name << " only in the folded run";
          EXPECT_TRUE(t.BitwiseEqual(it->second)) << what << ": " << name << " differs at cap " << IsaName(cap)
                                                  << (onednn ? ", oneDNN" : ", hand-written") << ", mode "
                                                  << static_cast<int>(mode);
          ++compared;
        }
        EXPECT_EQ(compared + clamps, static_cast<int>(separate->values.size())) << what;
      }
    }
  }
}

struct UnitCase {
  const char* name;
  int64_t cin, cout, kernel, stride, group;
  DataType stage_type;
  DataType y_type;
  float clamp_lo, clamp_hi;  // Relu: hi < lo means no upper bound
};

class ClampFoldingTest : public ::testing::TestWithParam<UnitCase> {};

TEST_P(ClampFoldingTest, FoldedUnitWritesTheSeparateClampsBytes) {
  const UnitCase& c = GetParam();
  std::mt19937 rng(3);
  const int64_t n = 2, h = 14, w = 14, pad = c.kernel / 2;
  const int64_t oh = (h + 2 * pad - c.kernel) / c.stride + 1, ow = (w + 2 * pad - c.kernel) / c.stride + 1;
  const std::vector<int64_t> out_dims = {n, c.cout, oh, ow};
  QdqGraph b;
  const float sx = 0.03f;
  Value* x = b.Input("x", {n, c.cin, h, w}, sx, -5);
  std::uniform_int_distribution<int> w8(-127, 127), b32(-4000, 4000);
  std::vector<int8_t> weights(c.cout * (c.cin / c.group) * c.kernel * c.kernel);
  for (int8_t& v : weights) v = static_cast<int8_t>(w8(rng));
  std::vector<float> ws, bs;
  std::vector<int32_t> bias(c.cout);
  for (int64_t k = 0; k < c.cout; ++k) {
    ws.push_back(0.001f + 0.0002f * static_cast<float>(k % 7));
    bs.push_back(sx * ws.back());
    bias[k] = b32(rng);
  }
  ir::AttributeMap attrs;
  attrs.Set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  attrs.Set("strides", std::vector<int64_t>{c.stride, c.stride});
  attrs.Set("group", c.group);
  Value* conv = b.Op("Conv",
                     {x, b.Weights("w", {c.cout, c.cin / c.group, c.kernel, c.kernel}, weights, ws, 0),
                      b.Bias("bias", bias, bs)},
                     out_dims, attrs);
  // The unit's own grid (what QLinearClamp reads), then the clamp and its grid.
  const int stage_zp = c.stage_type == DataType::kUint8 ? 131 : 3;
  Value* stage = b.QuantizeDequantize(conv, c.stage_type, 0.047f, stage_zp);
  ir::AttributeMap bounds;
  Value* clamped = nullptr;
  if (c.clamp_hi < c.clamp_lo) {
    clamped = b.Op("Relu", {stage}, out_dims);
  } else {
    clamped = b.Op("Clip", {stage, b.FloatConst("lo", c.clamp_lo), b.FloatConst("hi", c.clamp_hi)}, out_dims);
  }
  const float y_scale = c.clamp_hi < c.clamp_lo ? 0.061f : (c.clamp_hi - c.clamp_lo) / 255.f;
  const int y_zp = c.y_type == DataType::kUint8 ? (c.clamp_lo < 0 ? 43 : 0) : (c.clamp_lo < 0 ? -85 : -128);
  b.Output(clamped, c.y_type, y_scale, y_zp);

  ir::Tensor xt(DataType::kInt8, {n, c.cin, h, w});
  std::uniform_int_distribution<int> i8(-128, 127);
  for (int8_t& v : xt.mutable_values<int8_t>()) v = static_cast<int8_t>(i8(rng));
  ExpectFoldingKeepsTheBytes(b.graph(), {{"x", std::move(xt)}}, c.name);
}

constexpr float kRelu = 1.f, kNoHi = 0.f;
INSTANTIATE_TEST_SUITE_P(
    Units, ClampFoldingTest,
    ::testing::Values(UnitCase{"pointwise_uint8_relu6", 16, 40, 1, 1, 1, DataType::kUint8, DataType::kUint8, 0.f, 6.f},
                      UnitCase{"pointwise_tail_int8_relu", 16, 37, 1, 1, 1, DataType::kInt8, DataType::kUint8, kRelu,
                               kNoHi},
                      UnitCase{"dense3x3_int8_clip", 8, 24, 3, 1, 1, DataType::kInt8, DataType::kInt8, -1.f, 2.5f},
                      UnitCase{"depthwise_s2_uint8_relu6", 32, 32, 3, 2, 32, DataType::kUint8, DataType::kInt8, 0.f,
                               6.f},
                      UnitCase{"depthwise_tail_uint8_clip", 20, 20, 3, 1, 20, DataType::kUint8, DataType::kUint8, -1.f,
                               2.5f}),
    [](const ::testing::TestParamInfo<UnitCase>& info) { return std::string(info.param.name); });

// The sample models at level bn, whose Relu / Relu6 follow their units as separate ops.
class SampleClampFoldingTest : public ::testing::TestWithParam<std::tuple<std::string, quant::ActivationType>> {};

TEST_P(SampleClampFoldingTest, FoldedModelGivesTheUnfoldedBytes) {
  const auto& [name, activations] = GetParam();
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/" + name));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, testing::QuantizeSample(name, fusion::FusionLevel::kBn, activations));
  ExpectFoldingKeepsTheBytes(*model.graph, tc.inputs, name);
}

INSTANTIATE_TEST_SUITE_P(Samples, SampleClampFoldingTest,
                         ::testing::Combine(::testing::Values("resnet_small", "mobilenetv2_small"),
                                            ::testing::Values(quant::ActivationType::kInt8,
                                                              quant::ActivationType::kUint8)));

}  // namespace
}  // namespace qfuse::runtime
