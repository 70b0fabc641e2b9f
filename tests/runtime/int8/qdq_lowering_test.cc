// The QDQ lowering's patterns on small hand-built QDQ graphs: which DQ -> op -> Q groups
// become which integer ops (and what they read and are named), and that groups no pattern
// takes stay DQ -> float op -> Q.
#include "runtime/int8/qdq_lowering.h"

#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "runtime/int8/int8_ops.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::Value;
using testing::QdqGraph;

// "op" for default-domain nodes, "domain.op" for the others, with their counts.
std::map<std::string, int> OpCounts(const ir::Graph& g) {
  std::map<std::string, int> counts;
  for (const ir::Node* n : g.nodes()) ++counts[n->domain().empty() ? n->op_type() : n->domain() + "." + n->op_type()];
  return counts;
}

std::string Q(const char* op) { return std::string(ir::kQfuseDomain) + "." + op; }

const ir::Node* OutputProducer(const ir::Graph& g) { return g.outputs()[0]->producer(); }

constexpr float kSx = 0.05f;
const std::vector<int64_t> kX = {1, 2, 4, 4};
const std::vector<int64_t> kY = {1, 3, 4, 4};

// DQ(x) -> Conv 1x1 (DQ(w) per channel, DQ(bias) at s_x * s_w[c]).
Value* Conv(QdqGraph& b, float bias_scale_error = 1.f) {
  const std::vector<float> ws = {0.01f, 0.02f, 0.03f};
  std::vector<float> bs;
  for (float s : ws) bs.push_back(kSx * s * bias_scale_error);
  Value* w = b.Weights("w", {3, 2, 1, 1}, {1, -2, 3, -4, 5, -6}, ws, 0);
  return b.Op("Conv", {b.Input("x", kX, kSx, 0), w, b.Bias("bias", {10, -20, 30}, bs)}, kY);
}

TEST(QdqLoweringTest, ConvResidualReluBecomesOneUnit) {
  QdqGraph b;
  Value* sum = b.Op("Add", {Conv(b), b.Input("r", kY, 0.1f, 3)}, kY);
  b.Output(b.Op("Relu", {sum}, kY), 0.1f, 0);
  const std::string conv_name = b.graph().FindValue("x_dequantized")->uses()[0].node->name();
  QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
  EXPECT_EQ(stats.units, 1);
  EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{Q(kQLinearUnitOp), 1}}));
  const ir::Node* unit = OutputProducer(b.graph());
  EXPECT_EQ(unit->name(), conv_name);
  EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
  EXPECT_EQ(b.graph().outputs()[0]->type().dtype, ir::DataType::kInt8);
  ASSERT_EQ(unit->inputs().size(), 4u);
  EXPECT_EQ(unit->input(ir::kUnitX)->name(), "x");
  EXPECT_EQ(unit->input(ir::kUnitW)->name(), "w");
  EXPECT_EQ(unit->input(ir::kUnitBias)->name(), "bias");
  EXPECT_EQ(unit->input(ir::kUnitResidual)->name(), "r");
  ASSERT_TRUE(unit->input(ir::kUnitW)->type().quant.has_value());
  EXPECT_EQ(unit->input(ir::kUnitW)->type().quant->scales.size(), 3u);
  EXPECT_EQ(unit->input(ir::kUnitResidual)->type().quant->zero_points[0], 3);
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*unit));
  EXPECT_EQ(spec.base_op, ir::UnitBaseOp::kConv);
  EXPECT_EQ(spec.activation, ir::UnitActivation::kRelu);
}

TEST(QdqLoweringTest, MatMulBiasSiluAtAFloatGraphOutputIsAUnit) {
  QdqGraph b;
  Value* x = b.Input("x", {2, 4}, kSx, 0);
  Value* mm = b.Op("MatMul", {x, b.Weights("w", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, {0.01f}, 0)}, {2, 2});
  Value* biased = b.Op("Add", {mm, b.Bias("bias", {5, -5}, {kSx * 0.01f})}, {2, 2});
  b.FloatOutput(b.Op("Mul", {biased, b.Op("Sigmoid", {biased}, {2, 2})}, {2, 2}));
  QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
  EXPECT_EQ(stats.units, 1);
  EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{Q(kQLinearUnitOp), 1}}));
  const ir::Node* unit = OutputProducer(b.graph());
  EXPECT_EQ(b.graph().outputs()[0]->type().dtype, ir::DataType::kFloat32);
  EXPECT_EQ(unit->input(ir::kUnitBias)->name(), "bias");
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*unit));
  EXPECT_EQ(spec.base_op, ir::UnitBaseOp::kMatMul);
  EXPECT_EQ(spec.activation, ir::UnitActivation::kSilu);
}

TEST(QdqLoweringTest, AddOfTwoActivations) {
  QdqGraph b;
  b.Output(b.Op("Add", {b.Input("a", kY, 0.1f, 0), b.Input("c", kY, 0.2f, 1)}, kY), 0.3f, 0);
  QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
  EXPECT_EQ(stats.adds, 1);
  EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{Q(kQLinearAddOp), 1}}));
}

// Two activations into a MatMul (attention) become ONNX QLinearMatMul reading the int8 values
// and the DQ / Q nodes' own scales and zero points, named as the MatMul was; mode fixed leaves
// the float group.
TEST(QdqLoweringTest, MatMulOfTwoActivationsBecomesQLinearMatMul) {
  for (numerics::RequantizeMode mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
    QdqGraph b;
    b.Output(b.Op("MatMul", {b.Input("a", {2, 3, 4}, 0.1f, 1), b.Input("c", {2, 4, 5}, 0.2f, -2)}, {2, 3, 5}), 0.3f, 4);
    const std::string matmul_name = b.graph().FindValue("a_dequantized")->uses()[0].node->name();
    LoweringOptions options;
    options.mode = mode;
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph(), options));
    if (mode == numerics::RequantizeMode::kFixed) {
      EXPECT_EQ(stats.activation_matmuls, 0);
      EXPECT_EQ(OpCounts(b.graph()).at("MatMul"), 1);
      continue;
    }
    EXPECT_EQ(stats.activation_matmuls, 1);
    EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{"QLinearMatMul", 1}}));
    const ir::Node* mm = OutputProducer(b.graph());
    EXPECT_EQ(mm->name(), matmul_name);
    EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
    ASSERT_EQ(mm->inputs().size(), 8u);
    EXPECT_EQ(mm->input(0)->name(), "a");
    EXPECT_EQ(mm->input(3)->name(), "c");
    EXPECT_EQ(mm->input(1)->initializer()->data<float>()[0], 0.1f);
    EXPECT_EQ(mm->input(2)->initializer()->data<int8_t>()[0], 1);
    EXPECT_EQ(mm->input(4)->initializer()->data<float>()[0], 0.2f);
    EXPECT_EQ(mm->input(5)->initializer()->data<int8_t>()[0], -2);
    EXPECT_EQ(mm->input(6)->initializer()->data<float>()[0], 0.3f);
    EXPECT_EQ(mm->input(7)->initializer()->data<int8_t>()[0], 4);
  }
}

// Softmax becomes QLinearSoftmax (axis kept) where onnxruntime fuses it: UINT8 in and out, mode
// onnx. An INT8 input (onnxruntime wants one type on both sides) and mode fixed keep the float op.
TEST(QdqLoweringTest, SoftmaxOfUint8BecomesQLinearSoftmax) {
  struct Case {
    ir::DataType x_type;
    numerics::RequantizeMode mode;
    bool lowered;
  };
  for (const Case& c : {Case{ir::DataType::kUint8, numerics::RequantizeMode::kOnnx, true},
                        Case{ir::DataType::kInt8, numerics::RequantizeMode::kOnnx, false},
                        Case{ir::DataType::kUint8, numerics::RequantizeMode::kFixed, false}}) {
    QdqGraph b;
    ir::AttributeMap axis;
    axis.Set("axis", int64_t{1});
    b.Output(b.Op("Softmax", {b.Input("x", {2, 5, 3}, c.x_type, 0.1f, 0)}, {2, 5, 3}, axis), ir::DataType::kUint8,
             1.f / 256, 0);
    LoweringOptions options;
    options.mode = c.mode;
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph(), options));
    EXPECT_EQ(stats.activation_softmaxes, c.lowered ? 1 : 0);
    if (!c.lowered) {
      EXPECT_EQ(OpCounts(b.graph()).at("Softmax"), 1);
      continue;
    }
    EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{Q(kQLinearSoftmaxOp), 1}}));
    const ir::Node* softmax = OutputProducer(b.graph());
    EXPECT_EQ(softmax->input(0)->name(), "x");
    EXPECT_EQ(*softmax->attrs().GetInt("axis", -1), 1);
    EXPECT_EQ(b.graph().outputs()[0]->type().dtype, ir::DataType::kUint8);
  }
}

TEST(QdqLoweringTest, ReluAndClipBecomeClampsWithTheirBounds) {
  for (const char* op : {"Relu", "Clip"}) {
    QdqGraph b;
    std::vector<Value*> inputs = {b.Input("x", kY, 0.1f, 0)};
    if (std::string(op) == "Clip") inputs = {inputs[0], b.FloatConst("lo", 0.f), b.FloatConst("hi", 6.f)};
    b.Output(b.Op(op, inputs, kY), 0.05f, -128);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.clamps, 1) << op;
    const ir::Node* clamp = OutputProducer(b.graph());
    EXPECT_EQ(clamp->op_type(), kQLinearClampOp);
    EXPECT_EQ(*clamp->attrs().GetFloat("min", -1.f), 0.f);
    EXPECT_EQ(*clamp->attrs().GetFloat("max", -1.f),
              std::string(op) == "Clip" ? 6.f : std::numeric_limits<float>::max());
  }
}

// DQ(x) -> `op` (2x2 kernel, or global) -> Q, x and y of the given params.
void PoolGraph(QdqGraph& b, const char* op, float x_scale, float y_scale) {
  ir::AttributeMap attrs;
  const bool global = std::string(op) == "GlobalAveragePool";
  if (!global) attrs.Set("kernel_shape", std::vector<int64_t>{2, 2});
  const std::vector<int64_t> dims = global ? std::vector<int64_t>{1, 3, 1, 1} : std::vector<int64_t>{1, 3, 3, 3};
  b.Output(b.Op(op, {b.Input("x", kY, x_scale, 4)}, dims, attrs), y_scale, 4);
}

TEST(QdqLoweringTest, DataMovementRunsOnInt8WhenTheParamsAgree) {
  {
    QdqGraph b;
    PoolGraph(b, "MaxPool", 0.1f, 0.1f);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.pass_through, 1);
    EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{"MaxPool", 1}}));
    EXPECT_EQ(OutputProducer(b.graph())->input(0)->name(), "x");
    EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
  }
  {  // other output params: the MaxPool stays between DQ and Q
    QdqGraph b;
    PoolGraph(b, "MaxPool", 0.1f, 0.2f);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.pass_through, 0);
    EXPECT_EQ(OpCounts(b.graph()),
              (std::map<std::string, int>{{"DequantizeLinear", 1}, {"MaxPool", 1}, {"QuantizeLinear", 1}}));
  }
}

// A nearest Resize between a DequantizeLinear and a QuantizeLinear of the same params moves the
// int8 bytes itself (DBNet's feature-pyramid upsampling); a linear one stays float.
TEST(QdqLoweringTest, NearestResizeRunsOnInt8) {
  for (const char* mode : {"nearest", "linear"}) {
    SCOPED_TRACE(mode);
    QdqGraph b;
    Value* x = b.Input("x", {1, 2, 2, 2}, kSx, 3);
    ir::AttributeMap attrs;
    attrs.Set("mode", std::string(mode));
    Value* scales = *b.graph().AddConstant("scales", ir::Tensor::FromVector<float>({4}, {1, 1, 2, 2}));
    b.Output(b.Op("Resize", {x, nullptr, scales}, {1, 2, 4, 4}, attrs), kSx, 3);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    const bool nearest = std::string(mode) == "nearest";
    EXPECT_EQ(stats.pass_through, nearest ? 1 : 0);
    EXPECT_EQ(OpCounts(b.graph()).count("QuantizeLinear"), nearest ? 0u : 1u);
    if (nearest) EXPECT_EQ(OutputProducer(b.graph())->input(0)->name(), "x");
  }
}

TEST(QdqLoweringTest, AveragePoolsAndConcat) {
  for (const auto& [op, integer_op] : {std::pair<const char*, const char*>{"AveragePool", kQLinearAveragePoolOp},
                                       {"GlobalAveragePool", kQLinearGlobalAveragePoolOp}}) {
    QdqGraph b;
    PoolGraph(b, op, 0.1f, 0.1f);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.average_pools, 1) << op;
    EXPECT_EQ(OutputProducer(b.graph())->op_type(), integer_op);
  }
  {
    QdqGraph b;
    ir::AttributeMap axis;
    axis.Set("axis", int64_t{1});
    b.Output(b.Op("Concat", {b.Input("a", kY, 0.1f, 0), b.Input("c", kY, 0.2f, 0)}, {1, 6, 4, 4}, axis), 0.2f, 0);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.concats, 1);
    EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{Q(kQLinearConcatOp), 1}}));
  }
}

// Groups no pattern takes keep their DQ -> float op -> Q.
TEST(QdqLoweringTest, UnmatchedGroupsStayFloat) {
  {  // an op without an int8 form (Sigmoid has one now: pattern (k), activation_lookup_test)
    QdqGraph b;
    b.Output(b.Op("Tanh", {b.Input("x", kY, 0.1f, 0)}, kY), 0.01f, -128);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(OpCounts(b.graph()),
              (std::map<std::string, int>{{"DequantizeLinear", 1}, {"QuantizeLinear", 1}, {"Tanh", 1}}));
  }
  {  // Add of a float constant
    QdqGraph b;
    b.Output(b.Op("Add", {b.Input("x", kY, 0.1f, 0), b.FloatConst("one", 1.f)}, kY), 0.1f, 0);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.adds, 0);
    EXPECT_EQ(OpCounts(b.graph()).count(Q(kQLinearAddOp)), 0u);
  }
  {  // a bias whose scale is not s_x * s_w
    QdqGraph b;
    b.Output(Conv(b, 1.5f), 0.1f, 0);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.units, 0);
    EXPECT_EQ(OpCounts(b.graph()).count("Conv"), 1u);
    EXPECT_EQ(OpCounts(b.graph()).count("QuantizeLinear"), 1u);
  }
  {  // the accumulator has a second reader: no group ends at one QuantizeLinear
    QdqGraph b;
    Value* c = Conv(b);
    b.Output(b.Op("Relu", {c}, kY), 0.1f, 0);
    b.FloatOutput(c);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.units, 0);
    EXPECT_EQ(stats.clamps, 0);
    EXPECT_EQ(OpCounts(b.graph()).count("Conv"), 1u);
  }
  {  // ConvTranspose has no integer unit kernel
    QdqGraph b;
    Value* w = b.Weights("w", {2, 3, 1, 1}, {1, 2, 3, 4, 5, 6}, {0.01f}, 0);
    b.Output(b.Op("ConvTranspose", {b.Input("x", kX, kSx, 0), w}, kY), 0.1f, 0);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.units, 0);
    EXPECT_EQ(OpCounts(b.graph()).count("ConvTranspose"), 1u);
  }
}

}  // namespace
}  // namespace qfuse::runtime::int8
