// Float MatMul and Gemm units on oneDNN's matmul against the hand-written kernels (checked
// against ONNX's node tests) on random inputs: MatMul units over rank-2 and rank-3 inputs with
// and without bias, residual and every activation; Gemm units with transB, a [N] or [1, N]
// bias; forms the oneDNN kernel leaves to the hand-written one (alpha != 1, transA, a bias
// that broadcasts over rows). Every graph output and observed value agrees within float
// tolerance, and oneDNN made primitives for the forms it takes.
#include "runtime/onednn/matmul_kernel.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/runtime/onednn/engine_compare.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

using testing::GraphBuilder;

ir::Value* AddUnit(GraphBuilder& b, const std::string& name, ir::UnitSpec spec, std::vector<ir::Value*> inputs,
                   ir::AttributeMap attrs, std::vector<int64_t> out_dims) {
  ir::WriteUnitSpec(spec, &attrs);
  ir::Node* unit = *b.graph().AddNode(ir::kUnitOpType, name, inputs, {name + "_y"}, attrs, ir::kQfuseDomain);
  ir::TensorType type{ir::DataType::kFloat32, {}, {}};
  type.shape.rank_known = true;
  for (int64_t d : out_dims) type.shape.dims.push_back(d < 0 ? ir::Dim{} : ir::Dim::Known(d));
  unit->output(0)->mutable_type() = type;
  return unit->output(0);
}

ir::UnitSpec Spec(ir::UnitBaseOp op, ir::UnitActivation activation) {
  ir::UnitSpec spec;
  spec.base_op = op;
  spec.activation = activation;
  spec.clip_min = -0.25f;
  spec.clip_max = activation == ir::UnitActivation::kClip ? 0.5f : 6.f;
  spec.alpha = activation == ir::UnitActivation::kLeakyRelu ? 0.1f : 0.3f;
  spec.beta = 0.4f;
  return spec;
}

constexpr ir::UnitActivation kActivations[] = {
    ir::UnitActivation::kNone,    ir::UnitActivation::kRelu,      ir::UnitActivation::kRelu6,
    ir::UnitActivation::kClip,    ir::UnitActivation::kHardSwish, ir::UnitActivation::kHardSigmoid,
    ir::UnitActivation::kSigmoid, ir::UnitActivation::kSilu,      ir::UnitActivation::kLeakyRelu};

// x [batch, 7, 24] -> MatMul unit (bias) -> MatMul unit (bias, the first's output as residual)
// -> a rank-2 MatMul unit without bias on a Reshape of it.
TEST(OneDnnMatMulUnitTest, MatMulUnitsEqualHandWrittenKernels) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  for (ir::UnitActivation activation : kActivations) {
    GraphBuilder b;
    const ir::UnitSpec spec = Spec(ir::UnitBaseOp::kMatMul, activation);
    ir::Value* x = b.Input("x", {-1, 7, 24});
    ir::Value* a = AddUnit(b, "a", spec, {x, b.Random("wa", {24, 40}), b.Random("ba", {40})}, {}, {-1, 7, 40});
    ir::Value* c = AddUnit(b, "c", spec, {a, b.Random("wc", {40, 40}), b.Random("bc", {40}), a}, {}, {-1, 7, 40});
    ir::Value* flat = b.Op("Reshape", {c, b.Ints("shape", {-1, 40})}, "flat", {-1, 40});
    ir::Value* d = AddUnit(b, "d", spec, {flat, b.Random("wd", {40, 9})}, {}, {-1, 9});
    b.Output(d);
    const int64_t before = OneDnnMatMulPrimitives();
    for (int64_t batch : {1, 3}) ExpectEnginesAgree(b.graph(), batch);
    EXPECT_EQ(OneDnnMatMulPrimitives() - before, 6) << ir::UnitActivationName(activation);  // 3 units x 2 batches
  }
}

TEST(OneDnnMatMulUnitTest, GemmUnitsEqualHandWrittenKernels) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  for (bool trans_b : {false, true}) {
    for (bool row_bias : {false, true}) {
      GraphBuilder b;
      const ir::UnitSpec spec = Spec(ir::UnitBaseOp::kGemm, ir::UnitActivation::kRelu);
      ir::AttributeMap attrs;
      attrs.Set("transB", int64_t{trans_b ? 1 : 0});
      ir::Value* x = b.Input("x", {-1, 33});
      const std::vector<int64_t> w_dims = trans_b ? std::vector<int64_t>{17, 33} : std::vector<int64_t>{33, 17};
      const std::vector<int64_t> bias_dims = row_bias ? std::vector<int64_t>{1, 17} : std::vector<int64_t>{17};
      ir::Value* y = AddUnit(b, "g", spec, {x, b.Random("w", w_dims), b.Random("bias", bias_dims)}, attrs, {-1, 17});
      // A second Gemm unit with the first's output as its residual (and no bias).
      ir::Value* z = AddUnit(b, "h", spec, {y, b.Random("w2", {17, 17}), nullptr, y}, {}, {-1, 17});
      b.Output(z);
      const int64_t before = OneDnnMatMulPrimitives();
      for (int64_t batch : {1, 5}) ExpectEnginesAgree(b.graph(), batch);
      EXPECT_EQ(OneDnnMatMulPrimitives() - before, 4);
    }
  }
}

// Forms the oneDNN kernel does not take run on the hand-written kernel, with its results.
TEST(OneDnnMatMulUnitTest, OtherGemmFormsStayHandWritten) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  struct Form {
    float alpha = 1.f, beta = 1.f;
    int64_t trans_a = 0;
    std::vector<int64_t> bias_dims = {11};
  };
  Form scaled;
  scaled.alpha = 0.5f;
  Form scaled_bias;
  scaled_bias.beta = 2.f;
  Form transposed_a;
  transposed_a.trans_a = 1;
  Form per_row_bias;
  per_row_bias.bias_dims = {6, 1};
  for (const Form& form : {scaled, scaled_bias, transposed_a, per_row_bias}) {
    GraphBuilder b;
    ir::AttributeMap attrs;
    attrs.Set("alpha", form.alpha);
    attrs.Set("beta", form.beta);
    attrs.Set("transA", form.trans_a);
    ir::Value* x = b.Input("x", form.trans_a != 0 ? std::vector<int64_t>{13, 6} : std::vector<int64_t>{6, 13});
    ir::Value* y = AddUnit(b, "g", Spec(ir::UnitBaseOp::kGemm, ir::UnitActivation::kNone),
                           {x, b.Random("w", {13, 11}), b.Random("bias", form.bias_dims)}, attrs, {6, 11});
    b.Output(y);
    const int64_t before = OneDnnMatMulPrimitives();
    ExpectEnginesAgree(b.graph(), 1);
    EXPECT_EQ(OneDnnMatMulPrimitives(), before);
  }
}

}  // namespace
}  // namespace qfuse::runtime::onednn
