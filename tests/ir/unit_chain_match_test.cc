// The unit chain matcher: what each option lets a chain absorb, and where it stops.
#include "ir/unit_chain_match.h"

#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"

namespace qfuse::ir {
namespace {

using testing::GraphBuilder;

// MatMul(x, w) -> Add(bias) -> Add(skip) -> x * Sigmoid(x) (SiLU) -> out.
struct Chain {
  GraphBuilder b;
  Node* matmul;
  Node* bias_add;
  Node* residual_add;
  Node* sigmoid;
  Node* mul;
};

void Build(Chain* c) {
  GraphBuilder& b = c->b;
  Value* mm = b.Op("MatMul", {b.Input("x", {2, 6}), b.Random("w", {6, 4})}, "mm", {2, 4});
  Value* biased = b.Op("Add", {b.Random("bias", {4}), mm}, "biased", {2, 4});
  Value* sum = b.Op("Add", {biased, b.Input("skip", {2, 4})}, "sum", {2, 4});
  Value* gate = b.Op("Sigmoid", {sum}, "gate", {2, 4});
  Value* out = b.Op("Mul", {gate, sum}, "out", {2, 4});
  b.Output(out);
  c->matmul = mm->producer();
  c->bias_add = biased->producer();
  c->residual_add = sum->producer();
  c->sigmoid = gate->producer();
  c->mul = out->producer();
}

UnitChainOptions Everything() {
  UnitChainOptions options;
  options.matmul_bias = [](const Node&, const Value& bias) { return bias.is_constant(); };
  options.residual = [](const Value& residual, const Value&, const Value&) { return residual.is_graph_input(); };
  return options;
}

TEST(UnitChainMatchTest, AbsorbsWhatTheOptionsAllow) {
  Chain c;
  Build(&c);
  std::optional<UnitChain> m = MatchUnitChain(*c.matmul, Everything());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->spec.base_op, UnitBaseOp::kMatMul);
  EXPECT_EQ(m->spec.activation, UnitActivation::kSilu);
  EXPECT_EQ(m->bias_add, c.bias_add->id());
  EXPECT_EQ(m->bias_index, 0);
  EXPECT_EQ(m->residual_add, c.residual_add->id());
  EXPECT_EQ(m->residual_index, 1);
  EXPECT_EQ(m->Nodes(), (std::vector<NodeId>{c.matmul->id(), c.bias_add->id(), c.residual_add->id(),
                                             c.sigmoid->id(), c.mul->id()}));
  EXPECT_EQ(UnitChainOutput(c.b.graph(), *m), c.mul->output(0));
}

TEST(UnitChainMatchTest, UnsetOptionsAbsorbNothingButTheActivation) {
  Chain c;
  Build(&c);
  std::optional<UnitChain> m = MatchUnitChain(*c.matmul, UnitChainOptions{});
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->Nodes(), std::vector<NodeId>{c.matmul->id()});  // the bias Add is not an activation
  EXPECT_EQ(UnitChainOutput(c.b.graph(), *m), c.matmul->output(0));

  UnitChainOptions no_silu = Everything();
  no_silu.activation = [](const UnitSpec& a) { return IsClampActivation(a.activation); };
  m = MatchUnitChain(*c.matmul, no_silu);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->spec.activation, UnitActivation::kNone);
  EXPECT_TRUE(m->activation.empty());
  EXPECT_EQ(UnitChainOutput(c.b.graph(), *m), c.residual_add->output(0));
}

TEST(UnitChainMatchTest, StopsAtAValueWithAnotherReader) {
  Chain c;
  Build(&c);
  c.b.Output(c.bias_add->output(0));  // the biased value is also a graph output
  std::optional<UnitChain> m = MatchUnitChain(*c.matmul, Everything());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->Nodes(), (std::vector<NodeId>{c.matmul->id(), c.bias_add->id()}));
}

TEST(UnitChainMatchTest, OnlyBaseOpsStartAChain) {
  Chain c;
  Build(&c);
  EXPECT_FALSE(MatchUnitChain(*c.residual_add, Everything()).has_value());
}

}  // namespace
}  // namespace qfuse::ir
