// Seed cases of the full fusion level: Conv2d / ConvTranspose2d (plain and grouped) /
// Conv3d / Linear (MatMul+Add and Gemm) -> BatchNormalization -> Add(residual) ->
// Relu | ReLU6 each become exactly one quantized unit, proven equal on the float
// runtime; ReLU6 is recognised from Clip bounds given as attributes (opset 9) or as
// inputs (opset 13); a BN whose producer output is shared is not folded.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "fusion/equivalence.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "ir/onnx_import.h"
#include "ir/tensor_proto.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::fusion {
namespace {

using testing::GraphBuilder;

using testing::OpCounts;

// Largest |element| of the FLOAT outputs of `graph` over `sets`.
absl::StatusOr<double> OutputMagnitude(const ir::Graph& graph,
                                       const std::vector<std::vector<ir::NamedTensor>>& sets) {
  QFUSE_ASSIGN_OR_RETURN(auto exec, runtime::Executor::Create(graph));
  double magnitude = 0;
  for (const auto& inputs : sets) {
    QFUSE_ASSIGN_OR_RETURN(auto outputs, exec->Run(inputs));
    for (const ir::NamedTensor& out : outputs) {
      if (out.tensor.dtype() != ir::DataType::kFloat32) continue;
      const float* p = out.tensor.data<float>();
      for (int64_t i = 0; i < out.tensor.num_elements(); ++i) magnitude = std::max(magnitude, std::fabs(double{p[i]}));
    }
  }
  return magnitude;
}

// Fuses `model` at the full level and proves the result equal to the original on three
// seeded random input sets (FLOAT inputs uniform in [-1, 1), symbolic batch 2): the max
// abs diff must be <= 1e-4 of the largest |output|. Prints the diff under `label`.
void FuseFullAndProve(ir::Model* model, const std::string& label) {
  std::unique_ptr<ir::Graph> before = model->graph->Clone();
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<PassStats> stats, Fuse(model, FusionLevel::kFull));
  EquivalenceOptions options;
  for (uint32_t seed : {11u, 12u, 13u}) {
    runtime::RandomInputOptions random;
    random.batch = 2;
    random.seed = seed;
    random.low = -1.f;
    random.high = 1.f;
    QFUSE_ASSERT_OK_AND_ASSIGN(auto inputs, runtime::RandomInputs(*before, random));
    options.input_sets.push_back(std::move(inputs));
  }
  QFUSE_ASSERT_OK_AND_ASSIGN(double magnitude, OutputMagnitude(*before, options.input_sets));
  ASSERT_GT(magnitude, 0.1) << label << ": the output is (nearly) all zero, the check would be vacuous";
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, *model->graph, options));
  EXPECT_GT(report.elements_compared, 0);
  const double tolerance = 1e-4 * magnitude;
  std::printf("[seed case] %-44s max abs diff %.3g (max |out| %.3g, tolerance %.3g, %lld elements)\n", label.c_str(),
              report.max_abs_diff, magnitude, tolerance, static_cast<long long>(report.elements_compared));
  EXPECT_LE(report.max_abs_diff, tolerance) << label << ": " << report.ToString();
}

// The whole graph is one unit node producing "out" from graph input "x": base op
// `base_op`, residual graph input "r", activation `activation`, and the BN folded into
// it (weights rewritten, a bias present, no BatchNormalization left).
void ExpectSingleUnit(const ir::Graph& g, ir::UnitBaseOp base_op, ir::UnitActivation activation,
                      const std::string& original_weights) {
  EXPECT_EQ(OpCounts(g).count("BatchNormalization"), 0u);
  ASSERT_EQ(g.num_nodes(), 1) << "the chain is not exactly one node";
  ASSERT_EQ(g.outputs().size(), 1u);
  const ir::Node* unit = g.outputs()[0]->producer();
  ASSERT_NE(unit, nullptr);
  ASSERT_TRUE(ir::IsUnit(*unit)) << unit->Describe();
  EXPECT_EQ(g.outputs()[0]->name(), "out");
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*unit));
  EXPECT_EQ(spec.base_op, base_op);
  EXPECT_EQ(spec.activation, activation);
  if (activation == ir::UnitActivation::kRelu6) {
    EXPECT_EQ(spec.clip_min, 0.f);
    EXPECT_EQ(spec.clip_max, 6.f);
  }
  ASSERT_NE(unit->input(ir::kUnitX), nullptr);
  EXPECT_EQ(unit->input(ir::kUnitX)->name(), "x");
  ASSERT_NE(unit->input(ir::kUnitW), nullptr);
  EXPECT_TRUE(unit->input(ir::kUnitW)->is_constant());
  EXPECT_NE(unit->input(ir::kUnitW)->name(), original_weights) << "BN was not folded into the weights";
  ASSERT_NE(unit->input(ir::kUnitBias), nullptr) << "BN shift must become the unit's bias";
  EXPECT_TRUE(unit->input(ir::kUnitBias)->is_constant());
  ASSERT_NE(unit->input(ir::kUnitResidual), nullptr);
  EXPECT_EQ(unit->input(ir::kUnitResidual)->name(), "r");
  EXPECT_TRUE(unit->input(ir::kUnitResidual)->is_graph_input());
}

// Which side of the residual Add the (BN'd) conv output is on.
enum class Side { kConvLeft, kConvRight };

std::string SideName(Side side) { return side == Side::kConvLeft ? "conv_left" : "conv_right"; }

ir::Value* ResidualAdd(GraphBuilder& b, ir::Value* main, ir::Value* residual, Side side,
                       const std::vector<int64_t>& dims) {
  return side == Side::kConvLeft ? b.Op("Add", {main, residual}, "add", dims)
                                 : b.Op("Add", {residual, main}, "add", dims);
}

ir::Value* Relu6(GraphBuilder& b, ir::Value* v, const std::vector<int64_t>& dims) {
  return b.Op("Clip", {v, b.Floats("relu6_lo", {}, {0.f}), b.Floats("relu6_hi", {}, {6.f})}, "out", dims);
}

class SeedCaseTest : public ::testing::TestWithParam<Side> {
 protected:
  std::string Label(const std::string& name) const { return name + "/" + SideName(GetParam()); }
};

// Conv2d (with bias, padded) -> BN -> Add(residual) -> Relu.
TEST_P(SeedCaseTest, Conv2dBnAddRelu) {
  GraphBuilder b(101);
  const std::vector<int64_t> dims = {-1, 4, 6, 6};
  ir::Value* x = b.Input("x", {-1, 3, 6, 6});
  ir::Value* r = b.Input("r", dims);
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {4, 3, 3, 3}), b.Random("bias", {4})}, "conv", dims,
                      GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  ir::Value* bn = b.BatchNorm(c, 4, "bn", dims);
  b.Output(b.Op("Relu", {ResidualAdd(b, bn, r, GetParam(), dims)}, "out", dims));
  ASSERT_NO_FATAL_FAILURE(FuseFullAndProve(&b.model(), Label("Conv2d->BN->Add->Relu")));
  ExpectSingleUnit(b.graph(), ir::UnitBaseOp::kConv, ir::UnitActivation::kRelu, "w");
}

// ConvTranspose2d, group 1, stride 2, weight [Cin=3, Cout=4, 3, 3], no bias; pads 1 and
// output_padding 1 give 4x4 -> 8x8. Then BN -> Add -> Clip(0, 6) with constant inputs.
TEST_P(SeedCaseTest, ConvTranspose2dBnAddRelu6) {
  GraphBuilder b(102);
  const std::vector<int64_t> dims = {-1, 4, 8, 8};
  ir::Value* x = b.Input("x", {-1, 3, 4, 4});
  ir::Value* r = b.Input("r", dims);
  ir::Value* c = b.Op("ConvTranspose", {x, b.Random("w", {3, 4, 3, 3}, -2.f, 2.f)}, "deconv", dims,
                      GraphBuilder::Attrs({{"strides", std::vector<int64_t>{2, 2}},
                                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                           {"output_padding", std::vector<int64_t>{1, 1}}}));
  ir::Value* bn = b.BatchNorm(c, 4, "bn", dims);
  b.Output(Relu6(b, ResidualAdd(b, bn, r, GetParam(), dims), dims));
  ASSERT_NO_FATAL_FAILURE(FuseFullAndProve(&b.model(), Label("ConvTranspose2d->BN->Add->ReLU6")));
  ExpectSingleUnit(b.graph(), ir::UnitBaseOp::kConvTranspose, ir::UnitActivation::kRelu6, "w");
}

// Grouped ConvTranspose2d: group 2, W [Cin=4, Cout/group=3, 2, 2] -> 6 output channels,
// stride 2 (3x3 -> 6x6), with bias. Then BN -> Add -> Relu.
TEST_P(SeedCaseTest, GroupedConvTranspose2dBnAddRelu) {
  GraphBuilder b(103);
  const std::vector<int64_t> dims = {-1, 6, 6, 6};
  ir::Value* x = b.Input("x", {-1, 4, 3, 3});
  ir::Value* r = b.Input("r", dims);
  ir::Value* c = b.Op("ConvTranspose", {x, b.Random("w", {4, 3, 2, 2}), b.Random("bias", {6})}, "deconv", dims,
                      GraphBuilder::Attrs({{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}}}));
  ir::Value* bn = b.BatchNorm(c, 6, "bn", dims);
  b.Output(b.Op("Relu", {ResidualAdd(b, bn, r, GetParam(), dims)}, "out", dims));
  ASSERT_NO_FATAL_FAILURE(FuseFullAndProve(&b.model(), Label("ConvTranspose2d(group 2)->BN->Add->Relu")));
  ExpectSingleUnit(b.graph(), ir::UnitBaseOp::kConvTranspose, ir::UnitActivation::kRelu, "w");
}

// Conv3d (padded, no bias) -> BN -> Add -> Clip(0, 6).
TEST_P(SeedCaseTest, Conv3dBnAddRelu6) {
  GraphBuilder b(104);
  const std::vector<int64_t> dims = {-1, 3, 4, 4, 4};
  ir::Value* x = b.Input("x", {-1, 2, 4, 4, 4});
  ir::Value* r = b.Input("r", dims);
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {3, 2, 3, 3, 3}, -1.5f, 1.5f)}, "conv", dims,
                      GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1}}}));
  ir::Value* bn = b.BatchNorm(c, 3, "bn", dims);
  b.Output(Relu6(b, ResidualAdd(b, bn, r, GetParam(), dims), dims));
  ASSERT_NO_FATAL_FAILURE(FuseFullAndProve(&b.model(), Label("Conv3d->BN->Add->ReLU6")));
  ExpectSingleUnit(b.graph(), ir::UnitBaseOp::kConv, ir::UnitActivation::kRelu6, "w");
}

// Linear as MatMul + Add(bias) -> BN over [N, C] -> Add(residual [N, C]) -> Relu.
TEST_P(SeedCaseTest, LinearMatMulAddBnAddRelu) {
  GraphBuilder b(105);
  const std::vector<int64_t> dims = {-1, 5};
  ir::Value* x = b.Input("x", {-1, 6});
  ir::Value* r = b.Input("r", dims);
  ir::Value* mm = b.Op("MatMul", {x, b.Random("w", {6, 5})}, "mm", dims);
  ir::Value* biased = b.Op("Add", {mm, b.Random("bias", {5})}, "biased", dims);
  ir::Value* bn = b.BatchNorm(biased, 5, "bn", dims);
  b.Output(b.Op("Relu", {ResidualAdd(b, bn, r, GetParam(), dims)}, "out", dims));
  ASSERT_NO_FATAL_FAILURE(FuseFullAndProve(&b.model(), Label("MatMul+Add->BN->Add->Relu")));
  ExpectSingleUnit(b.graph(), ir::UnitBaseOp::kMatMul, ir::UnitActivation::kRelu, "w");
  EXPECT_NE(b.graph().outputs()[0]->producer()->input(ir::kUnitBias)->name(), "bias") << "BN shift not folded";
}

// Linear as Gemm(transB=1, W [N=5, K=6], C [5]) -> BN -> Add -> Clip(0, 6).
TEST_P(SeedCaseTest, LinearGemmTransBBnAddRelu6) {
  GraphBuilder b(106);
  const std::vector<int64_t> dims = {-1, 5};
  ir::Value* x = b.Input("x", {-1, 6});
  ir::Value* r = b.Input("r", dims);
  ir::Value* g = b.Op("Gemm", {x, b.Random("w", {5, 6}, -3.f, 3.f), b.Random("c", {5})}, "gemm", dims,
                      GraphBuilder::Attrs({{"transB", int64_t{1}}}));
  ir::Value* bn = b.BatchNorm(g, 5, "bn", dims);
  b.Output(Relu6(b, ResidualAdd(b, bn, r, GetParam(), dims), dims));
  ASSERT_NO_FATAL_FAILURE(FuseFullAndProve(&b.model(), Label("Gemm(transB=1)->BN->Add->ReLU6")));
  ExpectSingleUnit(b.graph(), ir::UnitBaseOp::kGemm, ir::UnitActivation::kRelu6, "w");
  EXPECT_EQ(*b.graph().outputs()[0]->producer()->attrs().GetInt("transB", 0), 1);
}

INSTANTIATE_TEST_SUITE_P(ResidualSide, SeedCaseTest, ::testing::Values(Side::kConvLeft, Side::kConvRight),
                         [](const ::testing::TestParamInfo<Side>& info) { return SideName(info.param); });

// --- ReLU6 from hand-built ONNX models: Clip bounds as attributes or as inputs. ---

void SetFloatInfo(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& in,
                         const std::string& out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + out);
  for (const std::string& s : in) n->add_input(s);
  n->add_output(out);
  return n;
}

void AddFloatAttr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void AddIntsAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void AddInitializer(onnx::GraphProto* g, const std::string& name, const ir::Tensor& t) {
  ir::TensorToProto(t, name, g->add_initializer());
}

// x [1, 3, 5, 5] -> Conv(initializer w [4, 3, 3, 3], b [4], pads 1) -> Clip(lo, hi) -> "y".
// opset < 11: the bounds are FLOAT attributes; otherwise initializer inputs.
onnx::ModelProto ConvClipModel(int64_t opset, float lo, float hi) {
  onnx::ModelProto m;
  m.set_ir_version(opset < 11 ? 4 : 7);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("conv_clip");
  SetFloatInfo(g->add_input(), "x", {1, 3, 5, 5});
  // Deterministic weights with both signs, large enough that some outputs pass 6.
  ir::Tensor w(ir::DataType::kFloat32, {4, 3, 3, 3});
  float* wd = w.data<float>();
  for (int64_t i = 0; i < w.num_elements(); ++i) wd[i] = 1.2f * std::sin(0.7f * static_cast<float>(i) + 0.3f) + 0.3f;
  AddInitializer(g, "w", w);
  AddInitializer(g, "b", ir::Tensor::FromVector<float>({4}, std::vector<float>{0.5f, -0.25f, 1.f, 0.f}));
  AddIntsAttr(AddNode(g, "Conv", {"x", "w", "b"}, "c"), "pads", {1, 1, 1, 1});
  if (opset < 11) {
    onnx::NodeProto* clip = AddNode(g, "Clip", {"c"}, "y");
    AddFloatAttr(clip, "min", lo);
    AddFloatAttr(clip, "max", hi);
  } else {
    AddInitializer(g, "lo", ir::Tensor::Scalar<float>(lo));
    AddInitializer(g, "hi", ir::Tensor::Scalar<float>(hi));
    AddNode(g, "Clip", {"c", "lo", "hi"}, "y");
  }
  SetFloatInfo(g->add_output(), "y", {1, 4, 5, 5});
  return m;
}

// Imports the model, fuses it fully (proven equal to the import), and returns the spec
// of its single unit, which must produce "y" from "x".
void ImportFuseSingleUnit(int64_t opset, float lo, float hi, ir::UnitSpec* spec) {
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, ir::ImportModel(ConvClipModel(opset, lo, hi), "", "conv_clip.onnx"));
  // The importer gives Clip its bounds as inputs whatever the source form.
  const ir::Node* clip = model.graph->outputs()[0]->producer();
  ASSERT_EQ(clip->op_type(), "Clip");
  ASSERT_EQ(clip->inputs().size(), 3u);
  EXPECT_FALSE(clip->attrs().Has("min"));
  EXPECT_FALSE(clip->attrs().Has("max"));
  ASSERT_NO_FATAL_FAILURE(FuseFullAndProve(&model, absl::StrFormat("opset %d Conv->Clip(%g, %g)", opset, lo, hi)));
  ASSERT_EQ(model.graph->num_nodes(), 1);
  const ir::Node* unit = model.graph->outputs()[0]->producer();
  ASSERT_TRUE(ir::IsUnit(*unit));
  EXPECT_EQ(model.graph->outputs()[0]->name(), "y");
  EXPECT_EQ(unit->input(ir::kUnitX)->name(), "x");
  EXPECT_EQ(unit->input(ir::kUnitW)->name(), "w");
  EXPECT_EQ(unit->input(ir::kUnitBias)->name(), "b");
  EXPECT_EQ(unit->input(ir::kUnitResidual), nullptr);
  QFUSE_ASSERT_OK_AND_ASSIGN(*spec, ir::ReadUnitSpec(*unit));
  EXPECT_EQ(spec->base_op, ir::UnitBaseOp::kConv);
}

TEST(Relu6RecognitionTest, Opset9ClipAttributesZeroSixIsRelu6) {
  ir::UnitSpec spec;
  ASSERT_NO_FATAL_FAILURE(ImportFuseSingleUnit(9, 0.f, 6.f, &spec));
  EXPECT_EQ(spec.activation, ir::UnitActivation::kRelu6);
  EXPECT_EQ(spec.clip_min, 0.f);
  EXPECT_EQ(spec.clip_max, 6.f);
}

TEST(Relu6RecognitionTest, Opset13ClipInitializerInputsZeroSixIsRelu6) {
  ir::UnitSpec spec;
  ASSERT_NO_FATAL_FAILURE(ImportFuseSingleUnit(13, 0.f, 6.f, &spec));
  EXPECT_EQ(spec.activation, ir::UnitActivation::kRelu6);
  EXPECT_EQ(spec.clip_min, 0.f);
  EXPECT_EQ(spec.clip_max, 6.f);
}

TEST(Relu6RecognitionTest, Opset9ClipAttributesZeroFiveIsClipNotRelu6) {
  ir::UnitSpec spec;
  ASSERT_NO_FATAL_FAILURE(ImportFuseSingleUnit(9, 0.f, 5.f, &spec));
  EXPECT_EQ(spec.activation, ir::UnitActivation::kClip);
  EXPECT_EQ(spec.clip_min, 0.f);
  EXPECT_EQ(spec.clip_max, 5.f);
}

// --- BN folding refused when the producer's output has a second consumer. ---
// fold_batchnorm_test.cc covers FoldBatchNormPass alone (SharedConvOutputIsNotFolded);
// this checks the full level: the conv becomes a unit with its original weights and no
// bias (nothing folded), and the BN is kept as its own per-channel Mul+Add.
TEST(SharedProducerTest, BnNotFoldedIntoConvUnitWhenConvOutputIsShared) {
  GraphBuilder b(107);
  const std::vector<int64_t> dims = {-1, 3, 4, 4};
  ir::Value* x = b.Input("x", {-1, 2, 4, 4});
  ir::Value* y = b.Op("Conv", {x, b.Random("w", {3, 2, 1, 1})}, "conv", dims);
  b.Output(b.BatchNorm(y, 3, "bn", dims));
  b.Output(b.Op("Relu", {y}, "relu", dims));
  ASSERT_NO_FATAL_FAILURE(FuseFullAndProve(&b.model(), "shared Conv output: BN not folded"));
  const auto counts = OpCounts(b.graph());
  EXPECT_EQ(counts.at(ir::kUnitOpType), 1);
  EXPECT_EQ(counts.count("Conv"), 0u);
  // The BN is still applied on its own (as scale and shift), not inside the conv.
  EXPECT_EQ(counts.count("BatchNormalization"), 0u);
  EXPECT_EQ(counts.at("Mul"), 1);
  EXPECT_EQ(counts.at("Add"), 1);
  EXPECT_EQ(counts.at("Relu"), 1);
  const ir::Node* unit = nullptr;
  for (const ir::Node* n : b.graph().nodes()) {
    if (ir::IsUnit(*n)) unit = n;
  }
  ASSERT_NE(unit, nullptr);
  EXPECT_EQ(unit->input(ir::kUnitW)->name(), "w") << "weights were rewritten: BN folded into a shared conv";
  EXPECT_EQ(unit->input(ir::kUnitBias), nullptr) << "the unit gained a bias: BN folded into a shared conv";
  EXPECT_EQ(unit->input(ir::kUnitResidual), nullptr);
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*unit));
  EXPECT_EQ(spec.activation, ir::UnitActivation::kNone);  // the Relu reads a shared value
  EXPECT_EQ(unit->output(0)->uses().size(), 2u);
}

}  // namespace
}  // namespace qfuse::fusion
