// The rewrite framework: anchors by op type and domain, the two drivers' visiting orders,
// rewrite counts, and the fixed point's convergence limit.
#include "ir/rewrite/pattern.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir::rewrite {
namespace {

using testing::GraphBuilder;

struct PairMatch {
  NodeId anchor;
  NodeId reader;
};

// Relu whose only reader is a Relu: the reader goes (its readers read the anchor).
class AbsorbNextRelu : public Pattern<PairMatch> {
 protected:
  std::optional<PairMatch> Match(const Graph& graph, const Node& anchor) const override {
    const Value* out = anchor.output(0);
    if (out->uses().size() != 1 || out->is_graph_output()) return std::nullopt;
    const Node* reader = out->uses()[0].node;
    if (reader->op_type() != "Relu" || reader->output(0)->is_graph_output()) return std::nullopt;
    return PairMatch{anchor.id(), reader->id()};
  }
  absl::Status Rewrite(Graph* graph, const PairMatch& m) const override {
    Node* reader = graph->FindNode(m.reader);
    graph->ReplaceAllUsesWith(reader->output(0), graph->FindNode(m.anchor)->output(0));
    return graph->RemoveNode(reader);
  }
};

// Every anchor gets a new Relu after it: never settles.
class AppendRelu : public Pattern<NodeId> {
 protected:
  std::optional<NodeId> Match(const Graph& graph, const Node& anchor) const override { return anchor.id(); }
  absl::Status Rewrite(Graph* graph, const NodeId& id) const override {
    Value* out = graph->FindNode(id)->output(0);
    return graph->AddNode("Relu", "", {out}, {graph->UniqueValueName(out->name())}).status();
  }
};

// x -> Relu r1 -> ... -> r<relus> -> Sigmoid -> y.
void Chain(GraphBuilder& b, int relus = 4) {
  Value* v = b.Input("x", {2});
  for (int i = 1; i <= relus; ++i) v = b.Op("Relu", {v}, "r" + std::to_string(i), {2});
  b.Output(b.Op("Sigmoid", {v}, "y", {2}));
}

int Count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

// A four-Relu chain and a table of AbsorbNextRelu.
struct AbsorbFixture {
  AbsorbFixture() {
    Chain(b);
    table.Add({"Relu"}, &absorb);
  }
  GraphBuilder b;
  AbsorbNextRelu absorb;
  RuleTable table;
};

TEST(RewriteTest, OnceVisitsTheStartingOrderAndSkipsRemovedNodes) {
  AbsorbFixture f;
  GraphBuilder& b = f.b;
  AbsorbNextRelu& absorb = f.absorb;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto counts, RewriteOnce(f.table, &b.graph()));
  // r1 absorbs r2, r2 is skipped, r3 absorbs r4: two Relus left.
  EXPECT_EQ(counts[&absorb], 2);
  EXPECT_EQ(Count(b.graph(), "Relu"), 2);
  QFUSE_EXPECT_OK(b.graph().Verify());
}

TEST(RewriteTest, FixedPointRewritesUntilNothingMatches) {
  AbsorbFixture f;
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t rewrites, RewriteToFixedPoint(f.table, &f.b.graph()));
  EXPECT_EQ(rewrites, 3);
  EXPECT_EQ(Count(f.b.graph(), "Relu"), 1);
}

TEST(RewriteTest, RulesAnchorOnlyAtTheirDefaultDomainOps) {
  GraphBuilder b;
  Chain(b);
  Value* y = b.graph().outputs()[0];
  (void)*b.graph().AddNode("Relu", "custom", {y}, {"z"}, {}, "com.example");
  AppendRelu append;
  RuleTable table;
  table.Add({"Sigmoid"}, &append);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto counts, RewriteOnce(table, &b.graph()));
  EXPECT_EQ(counts[&append], 1);  // the Sigmoid only; the Relu it adds is not visited
  EXPECT_EQ(Count(b.graph(), "Relu"), 6);
  EXPECT_TRUE(table.RulesFor(*b.graph().FindValue("z")->producer()).empty());
}

TEST(RewriteTest, TheFirstRuleThatMatchesWins) {
  GraphBuilder b;
  Chain(b, 3);
  AbsorbNextRelu absorb;
  AppendRelu append;
  RuleTable table;
  table.Add({"Relu"}, &absorb);
  table.Add({"Relu"}, &append);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto counts, RewriteOnce(table, &b.graph()));
  // r1 absorbs r2 (both rules match there; the first added wins); r3, read by the Sigmoid,
  // is left to `append`.
  EXPECT_EQ(counts[&absorb], 1);
  EXPECT_EQ(counts[&append], 1);
  EXPECT_EQ(Count(b.graph(), "Relu"), 3);
}

TEST(RewriteTest, FixedPointFailsWhenRewritesDoNotSettle) {
  GraphBuilder b;
  Chain(b);
  AppendRelu append;
  RuleTable table;
  table.Add({"Sigmoid"}, &append);
  absl::StatusOr<int64_t> rewrites = RewriteToFixedPoint(table, &b.graph());
  EXPECT_FALSE(rewrites.ok());
  EXPECT_NE(rewrites.status().message().find("do not converge"), std::string::npos) << rewrites.status();
}

}  // namespace
}  // namespace qfuse::ir::rewrite
