// Quantized-unit formation: which chains become one unit, and equality on float.
#include "fusion/passes/form_units.h"

#include <map>

#include "fusion/equivalence.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "ir/graph_compare.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::fusion {
namespace {

using testing::GraphBuilder;

std::vector<const ir::Node*> Units(const ir::Graph& g) {
  std::vector<const ir::Node*> units;
  for (const ir::Node* n : g.nodes()) {
    if (ir::IsUnit(*n)) units.push_back(n);
  }
  return units;
}

void FuseFullAndCheck(GraphBuilder& b) {
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  QFUSE_ASSERT_OK_AND_ASSIGN(auto stats, Fuse(&b.model(), FusionLevel::kFull));
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph()));
  EXPECT_LE(report.max_abs_diff, 2e-5) << report.ToString();
}

// h = Relu(x); Conv(h) -> BN -> Add(skip, .) -> Relu with skip = Conv1x1(x): the tail
// of a ResNet block with a projection shortcut (branches read different values, so
// branch merging does not apply).
TEST(FormUnitsTest, ConvBnAddReluIsOneUnit) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 3, 5, 5});
  ir::Value* skip = b.Op("Conv", {x, b.Random("ws", {4, 3, 1, 1})}, "skip", {-1, 4, 5, 5});
  ir::Value* h = b.Op("Relu", {x}, "h", {-1, 3, 5, 5});
  ir::Value* c = b.Op("Conv", {h, b.Random("w", {4, 3, 3, 3}), b.Random("bias", {4})}, "conv", {-1, 4, 5, 5},
                      GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  ir::Value* bn = b.BatchNorm(c, 4, "bn", {-1, 4, 5, 5});
  ir::Value* add = b.Op("Add", {skip, bn}, "add", {-1, 4, 5, 5});  // conv output on the right
  b.Output(b.Op("Relu", {add}, "out", {-1, 4, 5, 5}));
  FuseFullAndCheck(b);
  auto units = Units(b.graph());
  ASSERT_EQ(units.size(), 2u);  // the block, and the 1x1 shortcut on its own
  EXPECT_EQ(b.graph().num_nodes(), 3);  // + the Relu feeding the block
  const ir::Node* block = b.graph().outputs()[0]->producer();
  ASSERT_TRUE(ir::IsUnit(*block));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*block));
  EXPECT_EQ(spec.base_op, ir::UnitBaseOp::kConv);
  EXPECT_EQ(spec.activation, ir::UnitActivation::kRelu);
  ASSERT_NE(block->input(ir::kUnitResidual), nullptr);
  EXPECT_EQ(block->input(ir::kUnitResidual)->producer(), units[0] == block ? units[1] : units[0]);
  EXPECT_EQ(b.graph().outputs()[0]->name(), "out");
}

// Models exported with dynamic height and width: ONNX shape inference leaves H and W of every
// conv output unknown, as empty dims or as a fresh invented symbol per value ("unk__N", what
// onnx 1.12 writes for torchvision exports). The residual still joins the unit (the kernels
// check the run-time shapes); a residual with a known different dim (a broadcast) or with
// different user-named dims does not.
TEST(FormUnitsTest, ResidualWithUnknownHeightAndWidthJoinsTheUnit) {
  enum Kind { kEmpty, kInvented, kBroadcast, kSwappedNames };
  for (Kind kind : {kEmpty, kInvented, kBroadcast, kSwappedNames}) {
    SCOPED_TRACE(kind);
    GraphBuilder b;
    int invented = 0;
    auto unknown_hw = [&](ir::Value* v, bool swapped = false) {
      for (int d : {2, 3}) {
        ir::Dim& dim = v->mutable_type().shape.dims[d];
        dim = ir::Dim{};
        if (kind == kInvented) dim.symbol = "unk__" + std::to_string(invented++);
        if (kind == kSwappedNames) dim.symbol = (d == 2) != swapped ? "height" : "width";
      }
      return v;
    };
    const bool broadcast = kind == kBroadcast;
    ir::Value* x = unknown_hw(b.Input("x", {-1, 4, 5, 5}));
    ir::Value* skip = b.Op("Relu", {x}, "skip", {-1, 4, broadcast ? 1 : 5, broadcast ? 1 : 5});
    if (!broadcast) unknown_hw(skip, /*swapped=*/true);
    ir::Value* c = unknown_hw(b.Op("Conv", {x, b.Random("w", {4, 4, 3, 3})}, "conv", {-1, 4, 5, 5},
                                   GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}})));
    ir::Value* add = unknown_hw(b.Op("Add", {c, skip}, "add", {-1, 4, 5, 5}));
    b.Output(unknown_hw(b.Op("Relu", {add}, "out", {-1, 4, 5, 5})));
    QFUSE_ASSERT_OK(Fuse(&b.model(), FusionLevel::kFull).status());
    const ir::Node* last = b.graph().outputs()[0]->producer();
    if (kind == kBroadcast || kind == kSwappedNames) {
      EXPECT_FALSE(ir::IsUnit(*last));  // the Add stays (and the Relu after it)
    } else {
      ASSERT_TRUE(ir::IsUnit(*last));
      EXPECT_NE(last->input(ir::kUnitResidual), nullptr);
    }
  }
}

TEST(FormUnitsTest, Relu6AsClipAndResidualWithoutActivation) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 4, 4, 4});
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {4, 1, 3, 3})}, "dw", {1, 4, 4, 4},
                      GraphBuilder::Attrs({{"group", int64_t{4}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  ir::Value* clip = b.Op("Clip", {c, b.Floats("lo", {}, {0.f}), b.Floats("hi", {}, {6.f})}, "relu6", {1, 4, 4, 4});
  ir::Value* p = b.Op("Conv", {clip, b.Random("wp", {4, 4, 1, 1})}, "project", {1, 4, 4, 4});
  b.Output(b.Op("Add", {p, x}, "out", {1, 4, 4, 4}));
  FuseFullAndCheck(b);
  auto units = Units(b.graph());
  ASSERT_EQ(units.size(), 2u);
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec first, ir::ReadUnitSpec(*b.graph().FindValue("relu6")->producer()));
  EXPECT_EQ(first.activation, ir::UnitActivation::kRelu6);
  EXPECT_EQ(first.clip_max, 6.f);
  const ir::Node* last = b.graph().outputs()[0]->producer();
  EXPECT_EQ(last->input(ir::kUnitResidual)->name(), "x");
  EXPECT_EQ(ir::ReadUnitSpec(*last)->activation, ir::UnitActivation::kNone);
}

// ReLU6 is recognised only for Clip(0, 6); Clip(0, 5) stays a general clip, and a Clip
// whose bound is not a constant is not fused at all.
TEST(FormUnitsTest, OnlyClipZeroSixIsRelu6) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 3, 3});
  ir::Value* hi = b.Input("hi", {});
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {2, 2, 1, 1})}, "c1", {1, 2, 3, 3});
  ir::Value* k1 = b.Op("Clip", {c1, b.Floats("lo1", {}, {0.f}), b.Floats("hi1", {}, {5.f})}, "k1", {1, 2, 3, 3});
  ir::Value* c2 = b.Op("Conv", {k1, b.Random("w2", {2, 2, 1, 1})}, "c2", {1, 2, 3, 3});
  b.Output(b.Op("Clip", {c2, b.Floats("lo2", {}, {0.f}), hi}, "k2", {1, 2, 3, 3}));
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  QFUSE_ASSERT_OK(Fuse(&b.model(), FusionLevel::kFull).status());
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec first, ir::ReadUnitSpec(*b.graph().FindValue("k1")->producer()));
  EXPECT_EQ(first.activation, ir::UnitActivation::kClip);
  EXPECT_EQ(first.clip_max, 5.f);
  const ir::Node* last = b.graph().outputs()[0]->producer();
  EXPECT_EQ(last->op_type(), "Clip");  // dynamic bound: not absorbed
  EXPECT_EQ(ir::ReadUnitSpec(*last->input(0)->producer())->activation, ir::UnitActivation::kNone);
  EquivalenceOptions options;
  std::vector<ir::NamedTensor> set = {{"x", ir::Tensor(ir::DataType::kFloat32, {1, 2, 3, 3})},
                                           {"hi", ir::Tensor::Scalar<float>(0.25f)}};
  for (float& v : set[0].tensor.mutable_values<float>()) v = static_cast<float>(&v - set[0].tensor.data<float>()) - 8;
  options.input_sets.push_back(std::move(set));
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph(), options));
  EXPECT_LE(report.max_abs_diff, 1e-5) << report.ToString();
}

TEST(FormUnitsTest, MatMulBiasReluAndGemmRelu) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 6});
  ir::Value* mm = b.Op("MatMul", {x, b.Random("w", {6, 5})}, "mm", {-1, 5});
  ir::Value* biased = b.Op("Add", {mm, b.Random("bias", {5})}, "biased", {-1, 5});
  ir::Value* r = b.Op("Relu", {biased}, "r", {-1, 5});
  ir::Value* g = b.Op("Gemm", {r, b.Random("w2", {3, 5}), b.Random("c", {3})}, "g", {-1, 3},
                      GraphBuilder::Attrs({{"transB", int64_t{1}}}));
  b.Output(b.Op("Relu", {g}, "out", {-1, 3}));
  FuseFullAndCheck(b);
  auto units = Units(b.graph());
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(b.graph().num_nodes(), 2);
  const ir::Node* first = b.graph().FindValue("r")->producer();
  EXPECT_EQ(ir::ReadUnitSpec(*first)->base_op, ir::UnitBaseOp::kMatMul);
  EXPECT_EQ(first->input(ir::kUnitBias)->name(), "bias");
}

TEST(FormUnitsTest, SharedIntermediateStopsTheChain) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 3, 3});
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {2, 2, 1, 1})}, "conv", {1, 2, 3, 3});
  ir::Value* add = b.Op("Add", {c, x}, "add", {1, 2, 3, 3});
  b.Output(b.Op("Relu", {add}, "r", {1, 2, 3, 3}));
  b.Output(add);  // the Add's output is also a graph output: Relu stays separate
  FuseFullAndCheck(b);
  EXPECT_EQ(Units(b.graph()).size(), 1u);
  EXPECT_EQ(b.graph().num_nodes(), 2);
}

// Conv -> [Add residual] -> activation, for each form of activation a unit absorbs.
struct ActivationCase {
  const char* name;
  ir::UnitActivation expected;
  bool residual;
};

// Appends the activation `kind` to `c` in its standard-op form (as torch exports it).
ir::Value* AddActivation(GraphBuilder& b, const std::string& kind, ir::Value* c, const std::vector<int64_t>& dims) {
  if (kind == "HardSwish") return b.Op("HardSwish", {c}, "out", dims);
  if (kind == "HardSigmoidMul") {  // torch's HardSwish below opset 14
    ir::Value* h = b.Op("HardSigmoid", {c}, "gate", dims,
                        GraphBuilder::Attrs({{"alpha", 1.f / 6.f}, {"beta", 0.5f}}));
    return b.Op("Mul", {c, h}, "out", dims);
  }
  if (kind == "SiLU") return b.Op("Mul", {b.Op("Sigmoid", {c}, "gate", dims), c}, "out", dims);
  if (kind == "Sigmoid") return b.Op("Sigmoid", {c}, "out", dims);
  if (kind == "HardSigmoid") {
    return b.Op("HardSigmoid", {c}, "out", dims, GraphBuilder::Attrs({{"alpha", 0.3f}, {"beta", 0.4f}}));
  }
  return b.Op("LeakyRelu", {c}, "out", dims, GraphBuilder::Attrs({{"alpha", 0.1f}}));
}

class UnitActivationTest : public ::testing::TestWithParam<ActivationCase> {};

TEST_P(UnitActivationTest, FormsOneUnitEqualOnFloat) {
  const ActivationCase& tc = GetParam();
  GraphBuilder b;
  const std::vector<int64_t> dims = {-1, 4, 5, 5};
  ir::Value* x = b.Input("x", {-1, 3, 5, 5});
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {4, 3, 3, 3}, -1.5f, 1.5f), b.Random("bias", {4})}, "conv", dims,
                      GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  c = b.BatchNorm(c, 4, "bn", dims);
  if (tc.residual) c = b.Op("Add", {c, b.Input("skip", dims)}, "add", dims);
  b.Output(AddActivation(b, tc.name, c, dims));
  FuseFullAndCheck(b);
  ASSERT_EQ(b.graph().num_nodes(), 1);
  const ir::Node* unit = b.graph().outputs()[0]->producer();
  ASSERT_TRUE(ir::IsUnit(*unit));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*unit));
  EXPECT_EQ(spec.activation, tc.expected) << ir::UnitActivationName(spec.activation);
  EXPECT_EQ(unit->input(ir::kUnitResidual) != nullptr, tc.residual);
  EXPECT_EQ(b.graph().outputs()[0]->name(), "out");
  if (tc.expected == ir::UnitActivation::kHardSigmoid) {
    EXPECT_EQ(spec.alpha, 0.3f);
    EXPECT_EQ(spec.beta, 0.4f);
  }
  if (tc.expected == ir::UnitActivation::kLeakyRelu) {
    EXPECT_EQ(spec.alpha, 0.1f);
  }
  // Export (the unit back as standard ops) runs equal too, at opset 13 (HardSwish as
  // HardSigmoid + Mul) and 14.
  for (int64_t opset : {13, 14}) {
    ir::ExportOptions options;
    options.opset = opset;
    QFUSE_ASSERT_OK_AND_ASSIGN(onnx::ModelProto proto, ir::ExportModel(b.model(), options));
    for (const auto& n : proto.graph().node()) {
      EXPECT_TRUE(n.domain().empty()) << n.op_type();
      if (opset < 14) {
        EXPECT_NE(n.op_type(), "HardSwish");
      }
    }
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model back, ir::ImportModel(proto, "", "exported"));
    QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(b.graph(), *back.graph));
    EXPECT_LE(report.max_abs_diff, 2e-5) << opset << ": " << report.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Activations, UnitActivationTest,
    ::testing::Values(ActivationCase{"HardSwish", ir::UnitActivation::kHardSwish, false},
                      ActivationCase{"HardSwish", ir::UnitActivation::kHardSwish, true},
                      ActivationCase{"HardSigmoidMul", ir::UnitActivation::kHardSwish, false},
                      ActivationCase{"HardSigmoidMul", ir::UnitActivation::kHardSwish, true},
                      ActivationCase{"SiLU", ir::UnitActivation::kSilu, false},
                      ActivationCase{"SiLU", ir::UnitActivation::kSilu, true},
                      ActivationCase{"Sigmoid", ir::UnitActivation::kSigmoid, false},
                      ActivationCase{"Sigmoid", ir::UnitActivation::kSigmoid, true},
                      ActivationCase{"HardSigmoid", ir::UnitActivation::kHardSigmoid, false},
                      ActivationCase{"LeakyRelu", ir::UnitActivation::kLeakyRelu, false},
                      ActivationCase{"LeakyRelu", ir::UnitActivation::kLeakyRelu, true}),
    [](const ::testing::TestParamInfo<ActivationCase>& info) {
      return std::string(info.param.name) + (info.param.residual ? "Residual" : "");
    });

// Narrower unit forms (onnxruntime's target): Conv -> Add -> Relu keeps its Add and Relu
// outside; Conv -> SiLU keeps the SiLU outside; Conv -> Clip(0, 6) and MatMul stay units, the
// MatMul without its bias Add. Each graph stays equal on float.
TEST(FormUnitsTest, NarrowUnitFormsLeaveResidualAndNonClampActivationsOut) {
  UnitForms forms;
  forms.residual_add = false;
  forms.matmul_bias = false;
  forms.non_clamp_activations = false;
  GraphBuilder b;
  const std::vector<int64_t> dims = {-1, 4, 5, 5};
  ir::Value* x = b.Input("x", dims);
  const ir::AttributeMap same = GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {4, 4, 3, 3}), b.Random("b1", {4})}, "c1", dims, same);
  ir::Value* skip = b.Op("Sigmoid", {x}, "skip", dims);  // not x: branch merging would take Conv(x) + x
  ir::Value* r1 = b.Op("Relu", {b.Op("Add", {c1, skip}, "add", dims)}, "r1", dims);
  ir::Value* c2 = b.Op("Conv", {r1, b.Random("w2", {4, 4, 3, 3})}, "c2", dims, same);
  ir::Value* s2 = b.Op("Mul", {b.Op("Sigmoid", {c2}, "gate", dims), c2}, "silu", dims);
  ir::Value* c3 = b.Op("Conv", {s2, b.Random("w3", {4, 4, 3, 3})}, "c3", dims, same);
  ir::Value* r3 = b.Op("Clip", {c3, b.Floats("lo", {}, {0.f}), b.Floats("hi", {}, {6.f})}, "relu6", dims);
  ir::Value* flat = b.Op("Flatten", {r3}, "flat", {-1, 100});
  b.Output(b.Op("Add", {b.Op("MatMul", {flat, b.Random("w4", {100, 3})}, "mm", {-1, 3}), b.Random("b4", {3})},
                "logits", {-1, 3}));
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  PipelineOptions options;
  options.unit_forms = forms;
  QFUSE_ASSERT_OK(Fuse(&b.model(), FusionLevel::kFull, options).status());
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph()));
  EXPECT_LE(report.max_abs_diff, 2e-5) << report.ToString();
  std::map<std::string, int> ops;
  for (const ir::Node* n : b.graph().nodes()) ++ops[n->op_type()];
  EXPECT_EQ(ops[ir::kUnitOpType], 4);  // the three Convs and the MatMul
  EXPECT_EQ(ops["Add"], 2);            // the residual Add and the MatMul's bias Add
  EXPECT_EQ(ops["Relu"], 1);           // after the residual Add
  EXPECT_EQ(ops["Sigmoid"], 2);        // the skip's and the SiLU's
  EXPECT_EQ(ops["Mul"], 1);
  EXPECT_EQ(ops["Clip"], 0);           // ReLU6 is a clamp: inside its unit
  for (const ir::Node* n : Units(b.graph())) {
    EXPECT_EQ(n->input(ir::kUnitResidual), nullptr) << n->Describe();
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*n));
    EXPECT_TRUE(ir::IsClampActivation(spec.activation)) << n->Describe();
  }
}

// x * Sigmoid(x) is SiLU only when x has no third reader; x * HardSigmoid(x) is HardSwish
// only for alpha 1/6, beta 1/2. Otherwise the unit stops before the activation.
TEST(FormUnitsTest, GatedProductsThatAreNotUnitActivations) {
  GraphBuilder b;
  const std::vector<int64_t> dims = {1, 2, 3, 3};
  ir::Value* x = b.Input("x", dims);
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {2, 2, 1, 1})}, "c1", dims);
  ir::Value* s = b.Op("Sigmoid", {c1}, "s", dims);
  ir::Value* silu = b.Op("Mul", {c1, s}, "silu", dims);
  ir::Value* third = b.Op("Relu", {c1}, "third", dims);  // a third reader of c1
  ir::Value* c2 = b.Op("Conv", {silu, b.Random("w2", {2, 2, 1, 1})}, "c2", dims);
  ir::Value* h = b.Op("HardSigmoid", {c2}, "h", dims, GraphBuilder::Attrs({{"alpha", 0.2f}, {"beta", 0.5f}}));
  b.Output(b.Op("Mul", {c2, h}, "out", dims));
  b.Output(third);
  FuseFullAndCheck(b);
  auto units = Units(b.graph());
  ASSERT_EQ(units.size(), 2u);
  for (const ir::Node* unit : units) {
    EXPECT_EQ(ir::ReadUnitSpec(*unit)->activation, ir::UnitActivation::kNone) << unit->Describe();
  }
  EXPECT_EQ(b.graph().FindValue("silu")->producer()->op_type(), "Mul");
  EXPECT_EQ(b.graph().FindValue("h")->producer()->op_type(), "HardSigmoid");
}

TEST(FormUnitsTest, UnitsExportAsStandardOpsAndRunEqual) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 3, 4, 4});
  ir::Value* skip = b.Input("skip", {-1, 3, 4, 4});
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {3, 3, 3, 3})}, "conv", {-1, 3, 4, 4},
                      GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  ir::Value* add = b.Op("Add", {c, skip}, "add", {-1, 3, 4, 4});
  b.Output(b.Op("Relu", {add}, "out", {-1, 3, 4, 4}));
  QFUSE_ASSERT_OK(Fuse(&b.model(), FusionLevel::kFull).status());
  ASSERT_EQ(Units(b.graph()).size(), 1u);
  QFUSE_ASSERT_OK_AND_ASSIGN(onnx::ModelProto proto, ir::ExportModel(b.model()));
  for (const auto& n : proto.graph().node()) EXPECT_TRUE(n.domain().empty()) << n.op_type();
  EXPECT_EQ(proto.graph().node_size(), 3);  // Conv, Add, Relu
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model back, ir::ImportModel(proto, "", "exported"));
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(b.graph(), *back.graph));
  EXPECT_LE(report.max_abs_diff, 1e-6) << report.ToString();
}

}  // namespace
}  // namespace qfuse::fusion
