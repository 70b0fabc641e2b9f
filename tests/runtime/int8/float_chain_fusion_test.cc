// The float-chain fusions on a float graph (runtime/int8/float_chain_fusion.h), as the
// executor applies them by default: the pre-opset-17 LayerNorm becomes one
// LayerNormalization and the pre-opset-20 GELU one qfuse.Gelu, whose values are onnxruntime's
// fused Gelu (ir::Gelu) bit for bit; with fuse_float_chains false (calibration, per-layer
// analysis) the graph runs as written, the chain's own arithmetic (ir::GeluChain) bit for bit.
// Both agree with the LayerNorm and the exact GELU computed here in double precision.
#include "runtime/int8/float_chain_fusion.h"

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/erf.h"
#include "runtime/executor.h"
#include "runtime/int8/int8_ops.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::int8 {
namespace {

using testing::GraphBuilder;

constexpr float kSqrt2 = 1.4142135f;
constexpr float kEpsilon = 1e-5f;
constexpr int64_t kRows = 5, kCols = 16;

using testing::OpCounts;

// Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5, PyTorch's order.
ir::Value* GeluChain(GraphBuilder& b, ir::Value* x, const std::vector<int64_t>& dims) {
  ir::Value* erf = b.Op("Erf", {b.Op("Div", {x, b.Floats("sqrt2", {}, {kSqrt2})}, "scaled", dims)}, "erf", dims);
  ir::Value* plus_one = b.Op("Add", {erf, b.Floats("one", {}, {1.f})}, "plus_one", dims);
  return b.Op("Mul", {b.Op("Mul", {x, plus_one}, "x_times", dims), b.Floats("half", {}, {0.5f})}, "gelu", dims);
}

// ReduceMean -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div -> Mul gamma -> Add beta
// over the last axis.
ir::Value* LayerNormChain(GraphBuilder& b, ir::Value* x, const std::vector<int64_t>& dims) {
  const ir::AttributeMap last = GraphBuilder::Attrs({{"axes", std::vector<int64_t>{-1}}});
  std::vector<int64_t> reduced = dims;
  reduced.back() = 1;
  ir::Value* mean = b.Op("ReduceMean", {x}, "mean", reduced, last);
  ir::Value* d = b.Op("Sub", {x, mean}, "d", dims);
  ir::Value* var = b.Op("ReduceMean", {b.Op("Pow", {d, b.Floats("two", {}, {2.f})}, "d2", dims)}, "var", reduced, last);
  ir::Value* sd =
      b.Op("Sqrt", {b.Op("Add", {var, b.Floats("eps", {}, {kEpsilon})}, "var_eps", reduced)}, "sd", reduced);
  ir::Value* n = b.Op("Div", {d, sd}, "normalised", dims);
  ir::Value* scaled = b.Op("Mul", {n, b.Random("gamma", {kCols}, 0.5f, 1.5f)}, "scaled_n", dims);
  return b.Op("Add", {scaled, b.Random("beta", {kCols})}, "ln", dims);
}

ir::Tensor RandomX(int64_t batch, float scale) {
  ir::Tensor t(ir::DataType::kFloat32, {batch, kRows, kCols});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.3f, scale);
  for (float& v : t.mutable_values<float>()) v = normal(rng);
  return t;
}

absl::StatusOr<std::vector<float>> RunGraph(const ir::Graph& g, bool fuse, const ir::Tensor& x,
                                            std::map<std::string, int>* ops) {
  ExecutorOptions options;
  options.fuse_float_chains = fuse;
  QFUSE_ASSIGN_OR_RETURN(auto exec, Executor::Create(g, options));
  *ops = OpCounts(exec->graph());
  QFUSE_ASSIGN_OR_RETURN(std::vector<ir::NamedTensor> out, exec->Run({{"x", x}}));
  if (out.size() != 1 || out[0].name != "gelu") return absl::InternalError("the graph output lost its name");
  const auto v = out[0].tensor.values<float>();
  return std::vector<float>(v.begin(), v.end());
}

TEST(FloatChainFusionTest, LayerNormThenGeluBecomeTwoOps) {
  GraphBuilder b;
  const std::vector<int64_t> dims = {-1, kRows, kCols};
  ir::Value* x = b.Input("x", dims);
  b.Output(GeluChain(b, LayerNormChain(b, x, dims), dims));
  const ir::Tensor gamma = *b.graph().FindValue("gamma")->initializer();
  const ir::Tensor beta = *b.graph().FindValue("beta")->initializer();
  const ir::Tensor input = RandomX(3, 2.f);
  std::map<std::string, int> fused_ops, plain_ops;
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<float> fused, RunGraph(b.graph(), true, input, &fused_ops));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<float> plain, RunGraph(b.graph(), false, input, &plain_ops));
  EXPECT_EQ(fused_ops, (std::map<std::string, int>{{"LayerNormalization", 1}, {kGeluOp, 1}}));
  EXPECT_EQ(plain_ops.at("ReduceMean"), 2);
  EXPECT_EQ(plain_ops.at("Erf"), 1);
  const auto xv = input.values<float>();
  for (int64_t row = 0; row < 3 * kRows; ++row) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < kCols; ++i) mean += xv[row * kCols + i];
    mean /= kCols;
    for (int64_t i = 0; i < kCols; ++i) var += std::pow(xv[row * kCols + i] - mean, 2);
    var /= kCols;
    for (int64_t i = 0; i < kCols; ++i) {
      const int64_t k = row * kCols + i;
      const double ln = (xv[k] - mean) / std::sqrt(var + kEpsilon) * gamma.values<float>()[i] + beta.values<float>()[i];
      const double want = 0.5 * ln * (1 + std::erf(ln / std::sqrt(2.0)));
      EXPECT_NEAR(fused[k], want, 3e-6 * (1 + std::abs(want))) << "fused, element " << k;
      EXPECT_NEAR(plain[k], want, 3e-6 * (1 + std::abs(want))) << "as written, element " << k;
    }
  }
}

TEST(FloatChainFusionTest, FusedGeluIsOnnxruntimesArithmetic) {
  GraphBuilder b;
  const std::vector<int64_t> dims = {-1, kRows, kCols};
  b.Output(GeluChain(b, b.Input("x", dims), dims));
  const ir::Tensor input = RandomX(64, 3.f);  // 5120 values, most of erf's range
  std::map<std::string, int> ops;
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<float> fused, RunGraph(b.graph(), true, input, &ops));
  EXPECT_EQ(ops, (std::map<std::string, int>{{kGeluOp, 1}}));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<float> plain, RunGraph(b.graph(), false, input, &ops));
  EXPECT_EQ(ops.at("Erf"), 1);
  const auto xv = input.values<float>();
  int differ = 0;
  for (size_t k = 0; k < xv.size(); ++k) {
    ASSERT_EQ(fused[k], ir::Gelu(xv[k])) << "x = " << xv[k];
    ASSERT_EQ(plain[k], ir::GeluChain(xv[k], kSqrt2, /*half_first=*/false)) << "x = " << xv[k];
    differ += fused[k] != plain[k];
  }
  // The two forms round differently on some inputs (dividing by sqrt 2 or multiplying by its
  // reciprocal), so the two runs did take different paths.
  EXPECT_GT(differ, 0);
}

// A chain whose intermediate is also a graph output keeps its ops (the value must exist).
TEST(FloatChainFusionTest, ChainReadElsewhereKeepsItsOps) {
  GraphBuilder b;
  const std::vector<int64_t> dims = {-1, kRows, kCols};
  b.Output(GeluChain(b, b.Input("x", dims), dims));
  b.Output(b.graph().FindValue("erf"));
  QFUSE_ASSERT_OK_AND_ASSIGN(FloatChainStats stats, FuseFloatChains(&b.graph()));
  EXPECT_EQ(stats.gelus, 0);
  EXPECT_EQ(OpCounts(b.graph()).at("Erf"), 1);
}

}  // namespace
}  // namespace qfuse::runtime::int8
