#include "ir/graph.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

TensorType FloatType(std::vector<int64_t> dims) { return TensorType{DataType::kFloat32, Shape::FromDims(dims), {}}; }

// x -> Relu -> a -> Add(a, w) -> y ; plus a dead Neg node and an unused constant.
struct Fixture {
  Graph graph;
  Value* x;
  Value* w;
  Node* relu;
  Node* add;
  Node* dead;
};

void Build(Fixture* f) {
  f->x = *f->graph.AddInput("x", FloatType({2, 3}));
  f->w = *f->graph.AddConstant("w", Tensor::FromVector<float>({3}, std::vector<float>{1, 2, 3}));
  // Insert Add first so insertion order is not topological.
  f->add = *f->graph.AddNode("Add", "add", {nullptr, f->w}, {"y"});
  f->relu = *f->graph.AddNode("Relu", "relu", {f->x}, {"a"});
  f->graph.SetInput(f->add, 0, f->relu->output(0));
  f->dead = *f->graph.AddNode("Neg", "neg", {f->x}, {"unused"});
  (void)*f->graph.AddConstant("orphan", Tensor::Scalar<float>(1.f));
  ASSERT_TRUE(f->graph.MarkOutput(f->add->output(0)).ok());
}

TEST(GraphTest, TopologicalOrderIsDeterministicAndRespectsEdges) {
  Fixture f;
  Build(&f);
  QFUSE_ASSERT_OK(f.graph.Verify());
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Node*> order, f.graph.TopologicalOrder());
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], f.relu);  // Add was inserted first but depends on Relu.
  EXPECT_EQ(order[1], f.add);
  EXPECT_EQ(order[2], f.dead);
}

TEST(GraphTest, UseListsTrackRewiring) {
  Fixture f;
  Build(&f);
  Value* a = f.relu->output(0);
  ASSERT_EQ(a->uses().size(), 1u);
  EXPECT_EQ(a->uses()[0].node, f.add);
  EXPECT_EQ(a->uses()[0].input_index, 0);
  // Bypass the Relu: Add reads x directly.
  f.graph.ReplaceAllUsesWith(a, f.x);
  EXPECT_TRUE(a->uses().empty());
  EXPECT_EQ(f.add->input(0), f.x);
  EXPECT_EQ(f.x->uses().size(), 3u);  // relu, neg, add
  QFUSE_ASSERT_OK(f.graph.RemoveNode(f.relu));
  QFUSE_EXPECT_OK(f.graph.Verify());
  EXPECT_EQ(f.graph.FindValue("a"), nullptr);
}

TEST(GraphTest, RemoveNodeRefusesWhileOutputUsed) {
  Fixture f;
  Build(&f);
  absl::Status s = f.graph.RemoveNode(f.relu);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("'a' is still used"), std::string::npos) << s;
}

TEST(GraphTest, FindNodeByIdUntilRemovedAndInClones) {
  Fixture f;
  Build(&f);
  EXPECT_EQ(f.graph.FindNode(f.relu->id()), f.relu);
  const Graph& view = f.graph;
  EXPECT_EQ(view.FindNode(f.add->id()), f.add);
  std::unique_ptr<Graph> copy = f.graph.Clone();
  ASSERT_NE(copy->FindNode(f.relu->id()), nullptr);
  EXPECT_EQ(copy->FindNode(f.relu->id())->name(), "relu");
  const int64_t dead_id = f.dead->id();
  QFUSE_ASSERT_OK(f.graph.RemoveNode(f.dead));
  EXPECT_EQ(f.graph.FindNode(dead_id), nullptr);
  EXPECT_NE(copy->FindNode(f.add->id()), nullptr);
}

TEST(GraphTest, DeadCodeRemovalKeepsOnlyWhatOutputsNeed) {
  Fixture f;
  Build(&f);
  EXPECT_EQ(f.graph.RemoveDeadCode(), 1);  // the Neg node
  EXPECT_EQ(f.graph.num_nodes(), 2);
  EXPECT_EQ(f.graph.FindValue("orphan"), nullptr);
  EXPECT_NE(f.graph.FindValue("w"), nullptr);
  QFUSE_EXPECT_OK(f.graph.Verify());
}

TEST(GraphTest, VerifyRejectsCycle) {
  Graph g;
  Value* x = *g.AddInput("x", FloatType({1}));
  Node* n1 = *g.AddNode("Add", "n1", {x, nullptr}, {"a"});
  Node* n2 = *g.AddNode("Relu", "n2", {n1->output(0)}, {"b"});
  g.SetInput(n1, 1, n2->output(0));
  ASSERT_TRUE(g.MarkOutput(n2->output(0)).ok());
  absl::Status s = g.Verify();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cycle"), std::string::npos) << s;
}

TEST(GraphTest, VerifyRejectsQuantParamsOnFloat) {
  Graph g;
  TensorType t = FloatType({1});
  t.quant = QuantParams{{0.5f}, {0}, std::nullopt};
  Value* x = *g.AddInput("x", t);
  ASSERT_TRUE(g.MarkOutput(x).ok());
  EXPECT_EQ(g.Verify().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GraphTest, DuplicateNamesAreRefused) {
  Graph g;
  Value* x = *g.AddInput("x", FloatType({1}));
  EXPECT_FALSE(g.AddInput("x", FloatType({1})).ok());
  EXPECT_FALSE(g.AddConstant("x", Tensor::Scalar<float>(0)).ok());
  EXPECT_FALSE(g.AddNode("Relu", "r", {x}, {"x"}).ok());
  EXPECT_EQ(g.UniqueValueName("x"), "x_1");
}

// onnxruntime refuses two nodes of one name, so the graph never makes them: a taken name gets
// a suffix (and a removed node's name is free again); Verify checks it.
TEST(GraphTest, NodeNamesStayUnique) {
  Graph g;
  Value* x = *g.AddInput("x", FloatType({1}));
  Node* a = *g.AddNode("Relu", "act", {x}, {"a"});
  Node* b = *g.AddNode("Relu", "act", {a->output(0)}, {"b"});
  Node* c = *g.AddNode("Relu", "act", {b->output(0)}, {"c"});
  Node* unnamed = *g.AddNode("Relu", "", {c->output(0)}, {"d"});
  EXPECT_EQ(a->name(), "act");
  EXPECT_EQ(b->name(), "act_1");
  EXPECT_EQ(c->name(), "act_2");
  EXPECT_EQ(unnamed->name(), "");
  QFUSE_ASSERT_OK(g.MarkOutput(unnamed->output(0)));
  QFUSE_EXPECT_OK(g.Verify());
  EXPECT_EQ(g.Clone()->UniqueNodeName("act"), "act_3");
  g.ReplaceAllUsesWith(b->output(0), a->output(0));
  QFUSE_ASSERT_OK(g.RemoveNode(b));
  EXPECT_EQ(g.UniqueNodeName("act_1"), "act_1");
}

// A clone has its own values and nodes but shares the (immutable) constant tensors; giving a
// constant of the clone new data leaves the original's alone.
TEST(GraphTest, CloneIsEqualAndSharesConstants) {
  Fixture f;
  Build(&f);
  std::unique_ptr<Graph> copy = f.graph.Clone();
  QFUSE_ASSERT_OK(copy->Verify());
  Value* w = copy->FindValue("w");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w, f.w);
  EXPECT_EQ(w->initializer(), f.w->initializer());  // the same tensor, not a copy
  EXPECT_EQ(copy->num_nodes(), f.graph.num_nodes());
  EXPECT_EQ(copy->FindValue("a")->uses()[0].node->name(), "add");
  const Tensor before = *f.w->initializer();
  Tensor other = before;
  other.mutable_values<float>()[0] += 1.0f;
  copy->SetConstantData(w, other);
  EXPECT_TRUE(f.w->initializer()->BitwiseEqual(before));
  EXPECT_TRUE(w->initializer()->BitwiseEqual(other));
}

TEST(TensorTest, ShapesAndCopies) {
  Tensor t = Tensor::FromVector<int8_t>({2, 2}, std::vector<int8_t>{-128, 0, 1, 127});
  EXPECT_EQ(t.num_elements(), 4);
  EXPECT_EQ(t.byte_size(), 4u);
  Tensor copy = t;
  copy.data<int8_t>()[0] = 5;
  EXPECT_EQ(t.data<int8_t>()[0], -128);
  EXPECT_FALSE(copy.BitwiseEqual(t));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  Tensor empty(DataType::kFloat32, {0, 3});
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_EQ(DimsToString(empty.dims()), "[0,3]");
}

TEST(TensorTypeTest, ShapeToString) {
  Shape s;
  s.rank_known = true;
  s.dims = {Dim::Symbolic("batch"), Dim::Known(3), Dim{}};
  EXPECT_EQ(s.ToString(), "[batch,3,?]");
  EXPECT_FALSE(s.fully_known());
  EXPECT_EQ(Shape::Unknown().ToString(), "?");
}

}  // namespace
}  // namespace qfuse::ir
