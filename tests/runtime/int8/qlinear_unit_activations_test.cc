// Units with non-linear activations (HardSwish, SiLU, Sigmoid, HardSigmoid, LeakyRelu) on
// the integer path: a QDQ Conv -> [Add DQ(r)] -> activation -> Q, as a fused unit exports,
// lowers to one QLinearUnit whose float epilogue (runtime/int8/output_stage.h) agrees with
// simulated quantization (DQ -> float ops -> Q) to within 1 LSB, nearly always exactly, in
// both requantization modes.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

using ir::Value;
using testing::QdqGraph;

struct ActivationCase {
  const char* activation;  // standard-op form, see AddActivation
  bool residual;
};

constexpr int64_t kCout = 8;
const std::vector<int64_t> kOutDims = {2, kCout, 6, 6};

// The activation in the form the exported QDQ graph has it.
Value* AddActivation(QdqGraph& b, const std::string& kind, Value* c) {
  ir::AttributeMap attrs;
  if (kind == "HardSwish") return b.Op("HardSwish", {c}, kOutDims);
  if (kind == "HardSigmoidMul") {
    attrs.Set("alpha", 1.f / 6.f);
    attrs.Set("beta", 0.5f);
    return b.Op("Mul", {c, b.Op("HardSigmoid", {c}, kOutDims, attrs)}, kOutDims);
  }
  if (kind == "SiLU") return b.Op("Mul", {b.Op("Sigmoid", {c}, kOutDims), c}, kOutDims);
  if (kind == "Sigmoid") return b.Op("Sigmoid", {c}, kOutDims);
  if (kind == "HardSigmoid") {
    attrs.Set("alpha", 0.2f);
    attrs.Set("beta", 0.5f);
    return b.Op("HardSigmoid", {c}, kOutDims, attrs);
  }
  attrs.Set("alpha", 0.1f);
  return b.Op("LeakyRelu", {c}, kOutDims, attrs);
}

bool IsGate(const std::string& kind) { return kind == "Sigmoid" || kind == "HardSigmoid"; }

// DQ(x) -> Conv(DQ(w), DQ(bias)) 3x3 pad 1, per-channel weights -> [Add DQ(r)] -> activation.
Value* BuildUnit(QdqGraph& b, const ActivationCase& tc, std::mt19937& rng) {
  const float sx = 0.02f;
  Value* x = b.Input("x", {2, 4, 6, 6}, sx, 3);
  std::uniform_int_distribution<int> w8(-127, 127), b32(-3000, 3000);
  std::vector<int8_t> w(kCout * 4 * 9);
  for (int8_t& v : w) v = static_cast<int8_t>(w8(rng));
  std::vector<float> ws, bs;
  std::vector<int32_t> bias(kCout);
  for (int64_t c = 0; c < kCout; ++c) {
    ws.push_back(0.003f + 0.0005f * c);
    bs.push_back(sx * ws.back());
    bias[c] = b32(rng);
  }
  ir::AttributeMap pads;
  pads.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  Value* c = b.Op("Conv", {x, b.Weights("w", {kCout, 4, 3, 3}, w, ws, 0), b.Bias("bias", bias, bs)}, kOutDims, pads);
  if (tc.residual) c = b.Op("Add", {c, b.Input("r", kOutDims, 0.03f, -2)}, kOutDims);
  return AddActivation(b, tc.activation, c);
}

std::vector<NamedTensor> RandomInputs(bool residual, std::mt19937& rng) {
  std::uniform_int_distribution<int> i8(-128, 127);
  std::vector<NamedTensor> in;
  for (const auto& [name, dims] : {std::pair<std::string, std::vector<int64_t>>{"x", {2, 4, 6, 6}}, {"r", kOutDims}}) {
    if (name == "r" && !residual) continue;
    ir::Tensor t(ir::DataType::kInt8, dims);
    for (int8_t& v : t.mutable_values<int8_t>()) v = static_cast<int8_t>(i8(rng));
    in.push_back({name, std::move(t)});
  }
  return in;
}

struct RunResult {
  ir::Tensor y;
  std::vector<std::string> ops;  // of the graph that ran
};

absl::StatusOr<RunResult> RunGraph(const ir::Graph& g, const std::vector<NamedTensor>& in, bool integer,
                             numerics::RequantizeMode mode) {
  ExecutorOptions options;
  options.integer_kernels = integer;
  options.requantize_mode = mode;
  QFUSE_ASSIGN_OR_RETURN(auto exec, Executor::Create(g, options));
  QFUSE_ASSIGN_OR_RETURN(auto out, exec->Run(in));
  RunResult r{out[0].tensor, {}};
  for (const ir::Node* n : exec->graph().nodes()) r.ops.push_back(n->op_type());
  return r;
}

class QLinearUnitActivationTest : public ::testing::TestWithParam<ActivationCase> {};

TEST_P(QLinearUnitActivationTest, WithinOneLsbOfSimulatedQuantization) {
  const ActivationCase& tc = GetParam();
  std::mt19937 rng(11);
  QdqGraph b;
  Value* y = BuildUnit(b, tc, rng);
  // Gates in [0, 1] over the int8 range; the others over about [-1, 6].
  if (IsGate(tc.activation)) {
    b.Output(y, 1.f / 255.f, -128);
  } else {
    b.Output(y, 0.03f, -95);
  }
  const std::vector<NamedTensor> in = RandomInputs(tc.residual, rng);
  QFUSE_ASSERT_OK_AND_ASSIGN(RunResult simulated, RunGraph(b.graph(), in, false, numerics::RequantizeMode::kOnnx));
  for (auto mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(RunResult integer, RunGraph(b.graph(), in, true, mode));
    EXPECT_EQ(integer.ops, std::vector<std::string>{"QLinearUnit"});
    ASSERT_EQ(integer.y.dims(), simulated.y.dims());
    int64_t exact = 0, max_diff = 0;
    std::vector<int64_t> histogram(256, 0);
    const int64_t n = integer.y.num_elements();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = integer.y.data<int8_t>()[i], s = simulated.y.data<int8_t>()[i];
      exact += q == s;
      max_diff = std::max(max_diff, std::abs(q - s));
      ++histogram[s + 128];
    }
    EXPECT_LE(max_diff, 1);
    EXPECT_GE(exact, n * 98 / 100) << exact << " of " << n << " exact";
    int64_t levels = 0;
    for (int64_t h : histogram) levels += h > 0;
    EXPECT_GE(levels, 32) << "the test data should span many output levels";
  }
}

// A unit that ends the graph dequantizes: float output of the activation.
TEST_P(QLinearUnitActivationTest, FloatOutputMatchesSimulated) {
  const ActivationCase& tc = GetParam();
  std::mt19937 rng(5);
  QdqGraph b;
  b.FloatOutput(BuildUnit(b, tc, rng));
  const std::vector<NamedTensor> in = RandomInputs(tc.residual, rng);
  QFUSE_ASSERT_OK_AND_ASSIGN(RunResult simulated, RunGraph(b.graph(), in, false, numerics::RequantizeMode::kOnnx));
  QFUSE_ASSERT_OK_AND_ASSIGN(RunResult integer, RunGraph(b.graph(), in, true, numerics::RequantizeMode::kOnnx));
  EXPECT_EQ(integer.ops, std::vector<std::string>{"QLinearUnit"});
  ASSERT_EQ(integer.y.dims(), simulated.y.dims());
  for (int64_t i = 0; i < integer.y.num_elements(); ++i) {
    const float a = integer.y.data<float>()[i], e = simulated.y.data<float>()[i];
    ASSERT_NEAR(a, e, 1e-5f + 1e-5f * std::abs(e)) << i;
  }
}

// The vector paths of the float epilogue (AVX-512 in one pass for HardSwish, HardSigmoid and
// LeakyRelu, activated_pixels.h; AVX2 in three) give the scalar path's bytes.
TEST_P(QLinearUnitActivationTest, SameBytesUnderEveryIsaCap) {
  const ActivationCase& tc = GetParam();
  std::mt19937 rng(23);
  QdqGraph b;
  b.Output(BuildUnit(b, tc, rng), IsGate(tc.activation) ? 1.f / 255.f : 0.03f, IsGate(tc.activation) ? -128 : -95);
  const std::vector<NamedTensor> in = RandomInputs(tc.residual, rng);
  QFUSE_ASSERT_OK_AND_ASSIGN(RunResult best, RunGraph(b.graph(), in, true, numerics::RequantizeMode::kOnnx));
  testing::IsaCapGuard guard;
  for (Isa cap : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar}) {
    if (cap > MaxIsa()) continue;
    SetIsaCap(cap);
    QFUSE_ASSERT_OK_AND_ASSIGN(RunResult capped, RunGraph(b.graph(), in, true, numerics::RequantizeMode::kOnnx));
    EXPECT_TRUE(capped.y.BitwiseEqual(best.y)) << IsaName(cap);
  }
}

INSTANTIATE_TEST_SUITE_P(Activations, QLinearUnitActivationTest,
                         ::testing::Values(ActivationCase{"HardSwish", false}, ActivationCase{"HardSwish", true},
                                           ActivationCase{"HardSigmoidMul", false},
                                           ActivationCase{"HardSigmoidMul", true}, ActivationCase{"SiLU", false},
                                           ActivationCase{"SiLU", true}, ActivationCase{"Sigmoid", false},
                                           ActivationCase{"Sigmoid", true}, ActivationCase{"HardSigmoid", false},
                                           ActivationCase{"HardSigmoid", true}, ActivationCase{"LeakyRelu", false},
                                           ActivationCase{"LeakyRelu", true}),
                         [](const ::testing::TestParamInfo<ActivationCase>& info) {
                           return std::string(info.param.activation) + (info.param.residual ? "Residual" : "");
                         });

// x * Sigmoid(x) where x has a third reader is no unit activation: the Conv lowers alone
// only if its output were quantized, so here nothing lowers and the simulated ops run.
TEST(QLinearUnitActivationTest, SharedPreActivationIsNotAUnit) {
  std::mt19937 rng(3);
  QdqGraph b;
  Value* c = BuildUnit(b, ActivationCase{"Sigmoid", false}, rng)->producer()->input(0);
  Value* s = c->uses()[0].node->output(0);
  Value* silu = b.Op("Mul", {c, s}, kOutDims);
  b.Output(b.Op("Add", {silu, c}, kOutDims), 0.05f, 0);  // c read a third time
  QFUSE_ASSERT_OK_AND_ASSIGN(RunResult integer,
                             RunGraph(b.graph(), RandomInputs(false, rng), true, numerics::RequantizeMode::kOnnx));
  for (const std::string& op : integer.ops) EXPECT_NE(op, "QLinearUnit");
}

}  // namespace
}  // namespace qfuse::runtime
