// Identity removal on the forms it takes (Identity, inference Dropout, an all-zero Pad) and
// the ones it must leave (a Pad that pads, a Pad whose pads are computed), each proven equal
// on the float runtime.
#include "fusion/passes/remove_identity.h"

#include <map>

#include "fusion/equivalence.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::fusion {
namespace {

using testing::GraphBuilder;

int Count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

// Runs the pass and checks the graph computes what it computed before, bit for bit.
void RemoveAndCheck(GraphBuilder& b) {
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  std::vector<PipelineStep> steps;
  steps.push_back({std::make_unique<RemoveIdentityPass>()});
  QFUSE_ASSERT_OK(RunPipeline(steps, &b.model()).status());
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph()));
  EXPECT_GT(report.elements_compared, 0);
  EXPECT_EQ(report.max_abs_diff, 0.0) << report.ToString();
}

TEST(RemoveIdentityTest, AllZeroPadBeforeAveragePoolIsRemoved) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 4, 6, 6});
  ir::Value* padded = b.Op("Pad", {x, b.Ints("pads", {0, 0, 0, 0, 0, 0, 0, 0})}, "padded", {-1, 4, 6, 6});
  b.Output(b.Op(
      "AveragePool", {padded}, "y", {-1, 4, 3, 3},
      GraphBuilder::Attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})));
  RemoveAndCheck(b);
  EXPECT_EQ(Count(b.graph(), "Pad"), 0);
  EXPECT_EQ(Count(b.graph(), "AveragePool"), 1);
}

TEST(RemoveIdentityTest, PadThatPadsStays) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 4, 6, 6});
  ir::Value* padded = b.Op("Pad", {x, b.Ints("pads", {0, 0, 0, 1, 0, 0, 0, 0})}, "padded", {2, 4, 6, 7});
  b.Output(b.Op("Relu", {padded}, "y", {2, 4, 6, 7}));
  RemoveAndCheck(b);
  EXPECT_EQ(Count(b.graph(), "Pad"), 1);
}

TEST(RemoveIdentityTest, PadWithTooFewPadsStays) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 4, 6, 6});
  b.Output(b.Op("Pad", {x, b.Ints("pads", {0, 0})}, "y", {2, 4, 6, 6}));
  std::vector<PipelineStep> steps;
  steps.push_back({std::make_unique<RemoveIdentityPass>()});
  QFUSE_ASSERT_OK(RunPipeline(steps, &b.model()).status());
  EXPECT_EQ(Count(b.graph(), "Pad"), 1);  // malformed: left for the kernel to refuse
}

TEST(RemoveIdentityTest, PadWithComputedPadsStays) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 4, 6, 6});
  ir::Value* pads = b.Input("pads", {8});
  pads->mutable_type().dtype = ir::DataType::kInt64;
  b.Output(b.Op("Pad", {x, pads}, "y", {-1, -1, -1, -1}));
  std::vector<PipelineStep> steps;
  steps.push_back({std::make_unique<RemoveIdentityPass>()});
  QFUSE_ASSERT_OK(RunPipeline(steps, &b.model()).status());
  EXPECT_EQ(Count(b.graph(), "Pad"), 1);
}

TEST(RemoveIdentityTest, IdentityIsRemovedAndAnOutputKeepsItsName) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3});
  ir::Value* r = b.Op("Relu", {x}, "r", {2, 3});
  b.Output(b.Op("Identity", {r}, "y", {2, 3}));
  RemoveAndCheck(b);
  EXPECT_EQ(Count(b.graph(), "Identity"), 0);
  EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
}

// A Cast to its input's own type goes (a float16 model imported as float32 has them around
// every op its converter kept in float32); a Cast that changes the type stays.
TEST(RemoveIdentityTest, SameTypeCastIsRemovedOtherCastsStay) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3});
  ir::Value* same = b.Op("Cast", {x}, "same", {2, 3}, GraphBuilder::Attrs({{"to", int64_t{1}}}));  // FLOAT
  ir::Value* r = b.Op("Relu", {same}, "r", {2, 3});
  ir::Value* wide = b.Op("Cast", {r}, "wide", {2, 3}, GraphBuilder::Attrs({{"to", int64_t{11}}}));  // DOUBLE
  wide->mutable_type().dtype = ir::DataType::kFloat64;
  b.Output(b.Op("Cast", {wide}, "y", {2, 3}, GraphBuilder::Attrs({{"to", int64_t{1}}})));
  RemoveAndCheck(b);
  EXPECT_EQ(Count(b.graph(), "Cast"), 2);
  EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
}

}  // namespace
}  // namespace qfuse::fusion
