// Gemm units whose output is float or whose activation is non-linear (a MobileNetV3
// classifier: Gemm -> HardSwish) store whole blocks of rows through the float epilogue of
// runtime/int8/output_stage.h. Their bytes must not depend on the ISA: every vector path
// (AVX-512 / AVX2 dequantization, activation and QuantizeLinear) gives the scalar path's
// bytes, which are the per-element epilogue's. And they stay within 1 LSB of simulated
// quantization (DQ -> Gemm -> [Add] -> activation -> Q in float), as the Conv units do.
#include <cstdint>
#include <cmath>
#include <cstdlib>
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

constexpr int64_t kRows = 37, kK = 70, kCout = 45;  // odd sizes: every vector tail runs
const std::vector<int64_t> kOutDims = {kRows, kCout};

struct GemmCase {
  const char* activation;  // "HardSwish", "LeakyRelu", "Sigmoid" or "" (none)
  bool residual;
  bool float_output;
};

// DQ(x) -> Gemm(DQ(w), DQ(bias), transB) -> [Add DQ(r)] -> activation -> [Q].
void Build(QdqGraph& b, const GemmCase& tc, std::mt19937& rng) {
  const float sx = 0.02f;
  Value* x = b.Input("x", {kRows, kK}, sx, 3);
  std::uniform_int_distribution<int> w8(-127, 127), b32(-3000, 3000);
  std::vector<int8_t> w(kCout * kK);
  for (int8_t& v : w) v = static_cast<int8_t>(w8(rng));
  std::vector<float> ws, bs;
  std::vector<int32_t> bias(kCout);
  for (int64_t c = 0; c < kCout; ++c) {
    ws.push_back(0.002f + 0.0001f * c);
    bs.push_back(sx * ws.back());
    bias[c] = b32(rng);
  }
  ir::AttributeMap gemm;
  gemm.Set("transB", int64_t{1});
  Value* y = b.Op("Gemm", {x, b.Weights("w", {kCout, kK}, w, ws, 0), b.Bias("bias", bias, bs)}, kOutDims, gemm);
  if (tc.residual) y = b.Op("Add", {y, b.Input("r", kOutDims, 0.03f, -2)}, kOutDims);
  const std::string act = tc.activation;
  if (act == "LeakyRelu") {
    ir::AttributeMap attrs;
    attrs.Set("alpha", 0.1f);
    y = b.Op("LeakyRelu", {y}, kOutDims, attrs);
  } else if (!act.empty()) {
    y = b.Op(act, {y}, kOutDims);
  }
  if (tc.float_output) {
    b.FloatOutput(y);
  } else {
    b.Output(y, act == "Sigmoid" ? 1.f / 255.f : 0.03f, act == "Sigmoid" ? -128 : -95);
  }
}

std::vector<NamedTensor> Inputs(bool residual, std::mt19937& rng) {
  std::uniform_int_distribution<int> i8(-128, 127);
  std::vector<NamedTensor> in;
  for (const auto& [name, dims] : {std::pair<std::string, std::vector<int64_t>>{"x", {kRows, kK}}, {"r", kOutDims}}) {
    if (name == "r" && !residual) continue;
    ir::Tensor t(ir::DataType::kInt8, dims);
    for (int8_t& v : t.mutable_values<int8_t>()) v = static_cast<int8_t>(i8(rng));
    in.push_back({name, std::move(t)});
  }
  return in;
}

absl::StatusOr<ir::Tensor> RunGraph(const ir::Graph& g, const std::vector<NamedTensor>& in, bool integer,
                                    std::vector<std::string>* ops = nullptr) {
  ExecutorOptions options;
  options.integer_kernels = integer;
  QFUSE_ASSIGN_OR_RETURN(auto exec, Executor::Create(g, options));
  QFUSE_ASSIGN_OR_RETURN(auto out, exec->Run(in));
  if (ops != nullptr) {
    for (const ir::Node* n : exec->graph().nodes()) ops->push_back(n->op_type());
  }
  return out[0].tensor;
}

class GemmEpilogueTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmEpilogueTest, SameBytesOnEveryIsaAndNearSimulated) {
  const GemmCase& tc = GetParam();
  std::mt19937 rng(17);
  QdqGraph b;
  Build(b, tc, rng);
  const std::vector<NamedTensor> in = Inputs(tc.residual, rng);
  std::vector<std::string> ops;
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor best, RunGraph(b.graph(), in, true, &ops));
  EXPECT_EQ(ops, std::vector<std::string>{"QLinearUnit"});
  {
    testing::IsaCapGuard guard;
    for (Isa cap : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar}) {
      if (cap > MaxIsa()) continue;
      SetIsaCap(cap);
      QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor capped, RunGraph(b.graph(), in, true));
      EXPECT_TRUE(capped.BitwiseEqual(best)) << IsaName(cap);
    }
  }
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor simulated, RunGraph(b.graph(), in, false));
  ASSERT_EQ(simulated.dims(), best.dims());
  const int64_t n = best.num_elements();
  if (tc.float_output) {
    for (int64_t i = 0; i < n; ++i) {
      const float a = best.data<float>()[i], e = simulated.data<float>()[i];
      ASSERT_NEAR(a, e, 1e-5f + 1e-5f * std::abs(e)) << i;
    }
    return;
  }
  int64_t exact = 0, levels = 0;
  std::vector<int64_t> histogram(256, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int q = best.data<int8_t>()[i], s = simulated.data<int8_t>()[i];
    ASSERT_LE(std::abs(q - s), 1) << i;
    exact += q == s;
    ++histogram[s + 128];
  }
  for (int64_t h : histogram) levels += h > 0;
  EXPECT_GE(exact, n * 98 / 100) << exact << " of " << n << " exact";
  EXPECT_GE(levels, 32) << "the test data should span many output levels";
}

INSTANTIATE_TEST_SUITE_P(Epilogues, GemmEpilogueTest,
                         ::testing::Values(GemmCase{"HardSwish", false, false}, GemmCase{"HardSwish", true, false},
                                           GemmCase{"HardSwish", false, true}, GemmCase{"LeakyRelu", false, false},
                                           GemmCase{"Sigmoid", true, false}, GemmCase{"", false, true},
                                           GemmCase{"", true, true}),
                         [](const ::testing::TestParamInfo<GemmCase>& info) {
                           std::string name = info.param.activation[0] == '\0' ? "NoActivation" : info.param.activation;
                           return name + (info.param.residual ? "Residual" : "") +
                                  (info.param.float_output ? "FloatOut" : "");
                         });

}  // namespace
}  // namespace qfuse::runtime
