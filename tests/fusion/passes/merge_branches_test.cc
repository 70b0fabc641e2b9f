// RepVGG branch merging through the bn pipeline (BN folded first), each merge proven
// equal to the unmerged graph on the float runtime.
#include "fusion/passes/merge_branches.h"

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

ir::AttributeMap ConvAttrs(int64_t pad, int64_t stride = 1, int64_t group = 1) {
  return GraphBuilder::Attrs({{"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                              {"strides", std::vector<int64_t>{stride, stride}},
                              {"group", group}});
}

// Runs the bn pipeline and checks against the graph before it.
void FuseAndCheck(GraphBuilder& b, int64_t expected_merges) {
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  QFUSE_ASSERT_OK_AND_ASSIGN(auto stats, Fuse(&b.model(), FusionLevel::kBn));
  int64_t merges = 0;
  for (const PassStats& s : stats) {
    if (s.pass == "merge_branches") merges = s.rewrites;
  }
  EXPECT_EQ(merges, expected_merges);
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph()));
  EXPECT_GT(report.elements_compared, 0);
  EXPECT_LE(report.max_abs_diff, 5e-5) << report.ToString();
  std::cout << ::testing::UnitTest::GetInstance()->current_test_info()->name() << ": nodes " << before->num_nodes()
            << " -> " << b.graph().num_nodes() << "; " << report.ToString() << "\n";
}

// y = BN(conv3x3(x)) + BN(conv1x1(x)) [+ BN(x) or + x].
void RepVggBlock(GraphBuilder& b, int64_t c, int64_t stride, int64_t group, int identity_kind) {
  const int64_t hw = 8, out_hw = (hw - 1) / stride + 1;
  const std::vector<int64_t> out = {-1, c, out_hw, out_hw};
  ir::Value* x = b.Input("x", {-1, c, hw, hw});
  ir::Value* k3 = b.Op("Conv", {x, b.Random("w3", {c, c / group, 3, 3})}, "k3", out, ConvAttrs(1, stride, group));
  ir::Value* k1 = b.Op("Conv", {x, b.Random("w1", {c, c / group, 1, 1})}, "k1", out, ConvAttrs(0, stride, group));
  ir::Value* sum = b.Op("Add", {b.BatchNorm(k3, c, "bn3", out), b.BatchNorm(k1, c, "bn1", out)}, "sum", out);
  if (identity_kind == 1) sum = b.Op("Add", {sum, x}, "sum_id", out);
  if (identity_kind == 2) sum = b.Op("Add", {b.BatchNorm(x, c, "bnid", out), sum}, "sum_id", out);
  b.Output(b.Op("Relu", {sum}, "y", out));
}

TEST(MergeBranchesTest, RepVggThreeBranchesWithIdentityBatchNorm) {
  GraphBuilder b;
  RepVggBlock(b, 4, 1, 1, /*identity_kind=*/2);
  FuseAndCheck(b, 2);
  auto counts = OpCounts(b.graph());
  EXPECT_EQ(counts["Conv"], 1);
  EXPECT_EQ(counts["Add"], 0);
  EXPECT_EQ(counts["Mul"], 0);
  EXPECT_EQ(b.graph().num_nodes(), 2);  // Conv, Relu
}

TEST(MergeBranchesTest, RepVggThreeBranchesWithPlainIdentityGrouped) {
  GraphBuilder b;
  RepVggBlock(b, 6, 1, 3, /*identity_kind=*/1);
  FuseAndCheck(b, 2);
  EXPECT_EQ(b.graph().num_nodes(), 2);
}

TEST(MergeBranchesTest, StrideTwoTwoBranches) {
  GraphBuilder b;
  RepVggBlock(b, 4, 2, 1, /*identity_kind=*/0);
  FuseAndCheck(b, 1);
  EXPECT_EQ(OpCounts(b.graph())["Conv"], 1);
}

TEST(MergeBranchesTest, SameGeometryConvsSumWeights) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 3, 6, 6});
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {5, 3, 3, 3}), b.Random("b1", {5})}, "c1", {1, 5, 4, 4});
  ir::Value* c2 = b.Op("Conv", {x, b.Random("w2", {5, 3, 3, 3})}, "c2", {1, 5, 4, 4});
  b.Output(b.Op("Add", {c1, c2}, "y", {1, 5, 4, 4}));
  FuseAndCheck(b, 1);
  EXPECT_EQ(b.graph().num_nodes(), 1);
  EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
}

TEST(MergeBranchesTest, IdentityNeedsEqualChannelsAndStrideOne) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 3, 6, 6});
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {3, 3, 3, 3})}, "c", {1, 3, 3, 3}, ConvAttrs(1, 2));
  ir::Value* pooled = b.Op("MaxPool", {x}, "p", {1, 3, 3, 3},
                           GraphBuilder::Attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                                                {"strides", std::vector<int64_t>{2, 2}}}));
  b.Output(b.Op("Add", {c, pooled}, "y", {1, 3, 3, 3}));
  FuseAndCheck(b, 0);
}

TEST(MergeBranchesTest, BranchWithAnotherConsumerIsKept) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 5, 5});
  ir::Value* c3 = b.Op("Conv", {x, b.Random("w3", {2, 2, 3, 3})}, "c3", {1, 2, 5, 5}, ConvAttrs(1));
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {2, 2, 1, 1})}, "c1", {1, 2, 5, 5}, ConvAttrs(0));
  b.Output(b.Op("Add", {c3, c1}, "y", {1, 2, 5, 5}));
  b.Output(c1);
  FuseAndCheck(b, 0);
}

TEST(MergeBranchesTest, MisalignedPadsAreKept) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 5, 5});
  ir::Value* c3 = b.Op("Conv", {x, b.Random("w3", {2, 2, 3, 3})}, "c3", {1, 2, 5, 5}, ConvAttrs(1));
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {2, 2, 1, 1})}, "c1", {1, 2, 7, 7}, ConvAttrs(1));
  ir::Value* sliced = b.Op("MaxPool", {c1}, "s", {1, 2, 5, 5}, GraphBuilder::Attrs({{"kernel_shape", std::vector<int64_t>{3, 3}}}));
  b.Output(b.Op("Add", {c3, sliced}, "y", {1, 2, 5, 5}));
  FuseAndCheck(b, 0);
}

}  // namespace
}  // namespace qfuse::fusion
