// Nodes put in an order where every node follows its inputs' producers, the file's order kept
// where it already is one; a cycle left to the checker; a subgraph's reads of the outer graph.
#include "ir/node_order.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/onnx_proto_builder.h"

namespace qfuse::ir {
namespace {

using testing::AddNode;

std::vector<std::string> Names(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const onnx::NodeProto& n : g.node()) names.push_back(n.name());
  return names;
}

TEST(NodeOrderTest, ProducersFirstTiesByFilePosition) {
  onnx::GraphProto g;
  AddNode(&g, "Relu", {"b"}, {"c"});      // reads the Add below
  AddNode(&g, "Add", {"x", "x"}, {"b"});  // reads only the graph input
  AddNode(&g, "Neg", {"x"}, {"n"});       // independent
  AddNode(&g, "Mul", {"c", "n"}, {"y"});  // reads both
  ASSERT_TRUE(SortNodesTopologically(&g));
  EXPECT_EQ(Names(g), (std::vector<std::string>{"Add_b", "Relu_c", "Neg_n", "Mul_y"}));
  // Sorted already: untouched.
  const std::vector<std::string> before = Names(g);
  ASSERT_TRUE(SortNodesTopologically(&g));
  EXPECT_EQ(Names(g), before);
}

TEST(NodeOrderTest, ACycleLeavesTheNodesAsTheyWere) {
  onnx::GraphProto g;
  AddNode(&g, "Relu", {"b"}, {"c"});
  AddNode(&g, "Add", {"c", "x"}, {"b"});
  AddNode(&g, "Neg", {"nowhere"}, {"n"});  // an input nothing produces constrains nothing
  EXPECT_FALSE(SortNodesTopologically(&g));
  EXPECT_EQ(Names(g), (std::vector<std::string>{"Relu_c", "Add_b", "Neg_n"}));
}

TEST(NodeOrderTest, ASubgraphsOuterReadsCount) {
  onnx::GraphProto g;
  onnx::NodeProto* branch = AddNode(&g, "If", {"cond"}, {"y"});
  onnx::AttributeProto* then = branch->add_attribute();
  then->set_name("then_branch");
  then->set_type(onnx::AttributeProto::GRAPH);
  AddNode(then->mutable_g(), "Identity", {"v"}, {"inner"});  // reads the outer "v"
  AddNode(&g, "Neg", {"x"}, {"v"});
  ASSERT_TRUE(SortNodesTopologically(&g));
  EXPECT_EQ(Names(g), (std::vector<std::string>{"Neg_v", "If_y"}));
}

}  // namespace
}  // namespace qfuse::ir
