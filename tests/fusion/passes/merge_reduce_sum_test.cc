// ReduceSum merging for every keepdims combination, and the PyTorch-exported seed case
// (two chained sums over a broadcast Mul), each proven equal on the float runtime.
#include "fusion/passes/merge_reduce_sum.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "fusion/equivalence.h"
#include "fusion/passes/contract_mul_reduce.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::fusion {
namespace {

using testing::GraphBuilder;

using testing::OpCounts;

std::vector<int64_t> AxesOf(const ir::Graph& g, const std::string& op) {
  for (const ir::Node* n : g.nodes()) {
    if (n->op_type() == op) {
      auto v = n->input(1)->initializer()->values<int64_t>();
      return {v.begin(), v.end()};
    }
  }
  return {};
}

ir::AttributeMap KeepDims(int64_t k) { return GraphBuilder::Attrs({{"keepdims", k}}); }

void MergeAndCheck(GraphBuilder& b, double tolerance = 1e-5) {
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  std::vector<PipelineStep> steps;
  steps.push_back({std::make_unique<MergeReduceSumPass>()});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto stats, RunPipeline(steps, &b.model()));
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph()));
  EXPECT_GT(report.elements_compared, 0);
  EXPECT_LE(report.max_abs_diff, tolerance) << report.ToString();
}

TEST(MergeReduceSumTest, KeepDimsZeroTwiceRemapsTheSecondAxes) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 4, 5, 6});
  ir::Value* r1 = b.Op("ReduceSum", {x, b.Ints("a1", {2})}, "r1", {2, 3, 5, 6}, KeepDims(0));
  // Axis 3 of r1 is axis 4 of x.
  b.Output(b.Op("ReduceSum", {r1, b.Ints("a2", {1, -1})}, "r2", {2, 5}, KeepDims(0)));
  MergeAndCheck(b);
  EXPECT_EQ(b.graph().num_nodes(), 1);
  EXPECT_EQ(AxesOf(b.graph(), "ReduceSum"), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(b.graph().outputs()[0]->name(), "r2");
}

TEST(MergeReduceSumTest, KeepDimsOneTwiceWithOverlappingNegativeAxes) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 3, 4, 5});
  ir::Value* r1 = b.Op("ReduceSum", {x, b.Ints("a1", {-1, 1})}, "r1", {-1, 1, 4, 1});
  b.Output(b.Op("ReduceSum", {r1, b.Ints("a2", {2, 3})}, "r2", {-1, 1, 1, 1}));
  MergeAndCheck(b);
  EXPECT_EQ(b.graph().num_nodes(), 1);
  EXPECT_EQ(AxesOf(b.graph(), "ReduceSum"), (std::vector<int64_t>{1, 2, 3}));
}

TEST(MergeReduceSumTest, MixedKeepDimsSqueezeWhatThePairDropped) {
  for (int64_t first_keeps : {0, 1}) {
    SCOPED_TRACE(first_keeps);
    GraphBuilder b;
    ir::Value* x = b.Input("x", {2, 3, 4, 5});
    ir::Value* r1 = b.Op("ReduceSum", {x, b.Ints("a1", {1})}, "r1", first_keeps ? std::vector<int64_t>{2, 1, 4, 5}
                                                                                  : std::vector<int64_t>{2, 4, 5},
                         KeepDims(first_keeps));
    const int64_t a2 = first_keeps ? 3 : 2;  // x's axis 3 either way
    b.Output(b.Op("ReduceSum", {r1, b.Ints("a2", {a2})}, "r2",
                  first_keeps ? std::vector<int64_t>{2, 1, 4} : std::vector<int64_t>{2, 4, 1}, KeepDims(1 - first_keeps)));
    MergeAndCheck(b);
    auto counts = OpCounts(b.graph());
    EXPECT_EQ(counts["ReduceSum"], 1);
    EXPECT_EQ(counts["Squeeze"], 1);
    EXPECT_EQ(AxesOf(b.graph(), "ReduceSum"), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(AxesOf(b.graph(), "Squeeze"), (std::vector<int64_t>{first_keeps ? 3 : 1}));
  }
}

TEST(MergeReduceSumTest, SharedIntermediateIsNotMerged) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 4});
  ir::Value* r1 = b.Op("ReduceSum", {x, b.Ints("a1", {0})}, "r1", {1, 3, 4});
  b.Output(b.Op("ReduceSum", {r1, b.Ints("a2", {1})}, "r2", {1, 1, 4}));
  b.Output(r1);
  MergeAndCheck(b);
  EXPECT_EQ(OpCounts(b.graph())["ReduceSum"], 2);
}

// (a.unsqueeze(-1) * b.view(1,500,7,4,13,8,32)).sum(dim=2).sum(dim=1).view(-1,13,8,32),
// as PyTorch exports it, with the leading sizes scaled by `scale_n` (500) and 7.
void BuildSeed(GraphBuilder& b, int64_t n, int64_t m) {
  ir::Value* a = b.Input("a", {1, n, m, 4, 13, 8});
  ir::Value* bb = b.Input("b", {1, n, m, 4, 13, 256});
  ir::Value* ua = b.Op("Unsqueeze", {a, b.Ints("unsq_axes", {-1})}, "ua", {1, n, m, 4, 13, 8, 1});
  ir::Value* vb = b.Op("Reshape", {bb, b.Ints("view_shape", {1, n, m, 4, 13, 8, 32})}, "vb", {1, n, m, 4, 13, 8, 32});
  ir::Value* prod = b.Op("Mul", {ua, vb}, "prod", {1, n, m, 4, 13, 8, 32});
  ir::Value* s1 = b.Op("ReduceSum", {prod, b.Ints("sum1_axes", {2})}, "s1", {1, n, 4, 13, 8, 32}, KeepDims(0));
  ir::Value* s2 = b.Op("ReduceSum", {s1, b.Ints("sum2_axes", {1})}, "s2", {1, 4, 13, 8, 32}, KeepDims(0));
  b.Output(b.Op("Reshape", {s2, b.Ints("out_shape", {-1, 13, 8, 32})}, "out", {4, 13, 8, 32}));
}

std::vector<PipelineStep> ReductionSteps(ContractMulReduceOptions options) {
  std::vector<PipelineStep> steps;
  steps.push_back({std::make_unique<MergeReduceSumPass>()});
  steps.push_back({std::make_unique<ContractMulReducePass>(options)});
  return steps;
}

struct RunCost {
  double ms = 0;
  int64_t peak_bytes = 0;
};

RunCost TimeGraph(const ir::Graph& g) {
  RunCost cost;
  auto exec = runtime::Executor::Create(g);
  EXPECT_TRUE(exec.ok()) << exec.status();
  if (!exec.ok()) return cost;
  auto inputs = runtime::RandomInputs(g, {});
  EXPECT_TRUE(inputs.ok());
  cost.ms = 1e30;
  for (int run = 0; run < 3; ++run) {  // best of three, the first one warms up
    const auto start = std::chrono::steady_clock::now();
    auto out = (*exec)->Run(*inputs);
    cost.ms = std::min(cost.ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    EXPECT_TRUE(out.ok()) << out.status();
  }
  cost.peak_bytes = (*exec)->peak_activation_bytes();
  return cost;
}

void SeedCase(int64_t n, int64_t m, bool timed) {
  for (bool force_matmul : {false, true}) {
    SCOPED_TRACE(force_matmul ? "forced MatMul form" : "default");
    GraphBuilder b;
    BuildSeed(b, n, m);
    std::unique_ptr<ir::Graph> before = b.graph().Clone();
    ContractMulReduceOptions options;
    options.only_when_fewer_elements = !force_matmul;
    QFUSE_ASSERT_OK_AND_ASSIGN(auto stats, RunPipeline(ReductionSteps(options), &b.model()));
    auto counts = OpCounts(b.graph());
    EXPECT_EQ(counts["ReduceSum"], force_matmul ? 0 : 1);
    EXPECT_EQ(counts["MatMul"], force_matmul ? 1 : 0);
    EXPECT_EQ(counts["Mul"], force_matmul ? 0 : 1);
    if (!force_matmul) {
      EXPECT_EQ(AxesOf(b.graph(), "ReduceSum"), (std::vector<int64_t>{1, 2}));
    }
    EquivalenceOptions eq;
    eq.random_sets = 1;
    QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph(), eq));
    EXPECT_EQ(report.elements_compared, 4 * 13 * 8 * 32);
    // Each output sums n*m products of numbers in [0,1): |out| <= n*m.
    EXPECT_LE(report.max_abs_diff, 1e-6 * n * m * 8) << report.ToString();
    std::string line = absl::StrCat("seed n=", n, " m=", m, force_matmul ? " matmul" : " merged",
                                    ": nodes ", before->num_nodes(), " -> ", b.graph().num_nodes(), "; ",
                                    report.ToString());
    if (timed) {
      const RunCost cb = TimeGraph(*before);
      const RunCost ca = TimeGraph(b.graph());
      absl::StrAppend(&line, "; time ", cb.ms, " ms -> ", ca.ms, " ms; peak activation bytes ", cb.peak_bytes,
                      " -> ", ca.peak_bytes);
    }
    std::cout << line << "\n";
  }
}

TEST(MergeReduceSumTest, SeedCaseSmall) { SeedCase(20, 7, /*timed=*/false); }

TEST(MergeReduceSumTest, SeedCaseRealShape) { SeedCase(500, 7, /*timed=*/true); }

}  // namespace
}  // namespace qfuse::fusion
