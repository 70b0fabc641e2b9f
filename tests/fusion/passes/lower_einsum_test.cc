// Einsum lowering, each equation proven equal to the runtime's Einsum kernel.
#include "fusion/passes/lower_einsum.h"

#include <map>

#include "fusion/equivalence.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::fusion {
namespace {

using testing::GraphBuilder;

using testing::OpCounts;

struct Case {
  std::string equation;
  std::vector<std::vector<int64_t>> inputs;  // -1: symbolic "batch"
  std::vector<int64_t> output;
  std::map<std::string, int> expected_ops;  // a subset of the lowered graph's op counts
};

void LowerAndCheck(const Case& c) {
  SCOPED_TRACE(c.equation);
  GraphBuilder b;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) ins.push_back(b.Input(absl::StrCat("x", i), c.inputs[i]));
  b.Output(b.Op("Einsum", ins, "y", c.output, GraphBuilder::Attrs({{"equation", c.equation}})));
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  std::vector<PipelineStep> steps;
  steps.push_back({std::make_unique<LowerEinsumPass>()});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto stats, RunPipeline(steps, &b.model()));
  auto counts = OpCounts(b.graph());
  EXPECT_EQ(counts["Einsum"], 0);
  for (const auto& [op, n] : c.expected_ops) EXPECT_EQ(counts[op], n) << op;
  EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
  EquivalenceOptions options;
  options.batch = 3;
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph(), options));
  EXPECT_GT(report.elements_compared, 0);
  EXPECT_LE(report.max_abs_diff, 2e-5) << report.ToString();
  std::cout << c.equation << ": " << b.graph().num_nodes() << " nodes; " << report.ToString() << "\n";
}

TEST(LowerEinsumTest, BroadcastOuterProductBecomesMul) {
  LowerAndCheck({"bld,dn->bldn", {{-1, 5, 4}, {4, 6}}, {-1, 5, 4, 6}, {{"Mul", 1}, {"Unsqueeze", 1}, {"MatMul", 0}}});
}

TEST(LowerEinsumTest, BatchedMatVec) {
  LowerAndCheck({"bdn,bn->bd", {{-1, 7, 5}, {-1, 5}}, {-1, 7}, {{"MatMul", 1}, {"Reshape", 2}}});
}

TEST(LowerEinsumTest, ThreeOperandsElementwiseAndOuter) {
  LowerAndCheck({"bld,bln,bld->bldn", {{-1, 3, 4}, {-1, 3, 5}, {-1, 3, 4}}, {-1, 3, 4, 5}, {{"Mul", 2}}});
}

TEST(LowerEinsumTest, MatMulForms) {
  LowerAndCheck({"ij,jk->ik", {{3, 4}, {4, 5}}, {3, 5}, {{"MatMul", 1}, {"Transpose", 0}, {"Reshape", 0}}});
  LowerAndCheck({"bij,bjk->bik", {{-1, 3, 4}, {-1, 4, 5}}, {-1, 3, 5}, {{"MatMul", 1}, {"Transpose", 0}}});
  LowerAndCheck({"bik,bjk->bij", {{-1, 3, 4}, {-1, 5, 4}}, {-1, 3, 5}, {{"MatMul", 1}, {"Transpose", 1}}});
  LowerAndCheck({"ji,jk->ik", {{4, 3}, {4, 5}}, {3, 5}, {{"MatMul", 1}, {"Transpose", 1}}});
  LowerAndCheck({"ij,kj->ki", {{3, 4}, {5, 4}}, {5, 3}, {{"MatMul", 1}, {"Transpose", 1}}});
  LowerAndCheck({"bhqd,bhkd->bhqk", {{-1, 2, 6, 8}, {-1, 2, 7, 8}}, {-1, 2, 6, 7}, {{"MatMul", 1}, {"Transpose", 1}}});
}

TEST(LowerEinsumTest, GroupedFreeAndContractedAxesUseReshape) {
  // Two contracted labels (c, d), two free labels on the left (a, b) with one symbolic.
  LowerAndCheck({"abcd,cde->abe", {{-1, 3, 4, 2}, {4, 2, 5}}, {-1, 3, 5}, {{"MatMul", 1}}});
  LowerAndCheck({"ab,bc,cd->ad", {{3, 4}, {4, 5}, {5, 6}}, {3, 6}, {{"MatMul", 2}}});
}

TEST(LowerEinsumTest, SingleOperandAndImplicitOutput) {
  LowerAndCheck({"ij->ji", {{3, 4}}, {4, 3}, {{"Transpose", 1}}});
  LowerAndCheck({"ijk->ki", {{3, 4, 5}}, {5, 3}, {{"ReduceSum", 1}, {"Transpose", 1}}});
  LowerAndCheck({"ij,jk", {{3, 4}, {4, 5}}, {3, 5}, {{"MatMul", 1}}});
  // A label only the first operand has is summed before the product.
  LowerAndCheck({"ijx,jk->ik", {{3, 4, 2}, {4, 5}}, {3, 5}, {{"ReduceSum", 1}, {"MatMul", 1}}});
}

TEST(LowerEinsumTest, UnsupportedFormsAreLeftAlone) {
  for (const Case& c : std::vector<Case>{{"ii->i", {{3, 3}}, {3}, {}}, {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5}, {}}}) {
    SCOPED_TRACE(c.equation);
    GraphBuilder b;
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < c.inputs.size(); ++i) ins.push_back(b.Input(absl::StrCat("x", i), c.inputs[i]));
    b.Output(b.Op("Einsum", ins, "y", c.output, GraphBuilder::Attrs({{"equation", c.equation}})));
    std::vector<PipelineStep> steps;
    steps.push_back({std::make_unique<LowerEinsumPass>()});
    QFUSE_ASSERT_OK_AND_ASSIGN(auto stats, RunPipeline(steps, &b.model()));
    EXPECT_EQ(OpCounts(b.graph())["Einsum"], 1);
  }
}

}  // namespace
}  // namespace qfuse::fusion
