// The unit spec's encoding (base op, activation, clamp bounds, weight channel axis) and
// ExpandUnits: every base op and activation, with a residual, expands into its standard ops
// and computes what the unit computes.
#include "ir/fused_unit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <cstring>
#include <vector>

#include "fusion/equivalence.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

using testing::GraphBuilder;

constexpr UnitActivation kActivations[] = {
    UnitActivation::kNone,        UnitActivation::kRelu,    UnitActivation::kRelu6,
    UnitActivation::kClip,        UnitActivation::kHardSwish, UnitActivation::kHardSigmoid,
    UnitActivation::kSigmoid,     UnitActivation::kSilu,    UnitActivation::kLeakyRelu};

UnitSpec SpecOf(UnitBaseOp base, UnitActivation activation) {
  UnitSpec spec = activation == UnitActivation::kRelu6   ? ClipSpec(0.f, 6.f)
                  : activation == UnitActivation::kClip ? ClipSpec(-0.5f, 0.75f)
                                                        : UnitSpec{};
  spec.base_op = base;
  spec.activation = activation;
  if (activation == UnitActivation::kHardSigmoid) {
    spec.alpha = 0.3f;
    spec.beta = 0.4f;
  }
  if (activation == UnitActivation::kLeakyRelu) spec.alpha = 0.1f;
  return spec;
}

TEST(UnitBaseOpTest, NamesRoundTrip) {
  for (UnitBaseOp op : kUnitBaseOps) EXPECT_EQ(ParseUnitBaseOp(UnitBaseOpName(op)), op);
  EXPECT_EQ(ParseUnitBaseOp("conv"), std::nullopt);
  EXPECT_EQ(ParseUnitBaseOp("Relu"), std::nullopt);
  EXPECT_TRUE(BiasFollowsBase(UnitBaseOp::kMatMul));
  EXPECT_FALSE(BiasFollowsBase(UnitBaseOp::kGemm));
}

TEST(UnitBaseOpTest, OnlyDefaultDomainNodes) {
  GraphBuilder b;
  Value* x = b.Input("x", {2, 3});
  Value* w = b.Random("w", {3, 4});
  b.Op("MatMul", {x, w}, "y");
  Node* custom = *b.graph().AddNode("MatMul", "custom", {x, w}, {"z"}, {}, "com.example");
  EXPECT_EQ(UnitBaseOpOf(*b.graph().FindValue("y")->producer()), UnitBaseOp::kMatMul);
  EXPECT_EQ(UnitBaseOpOf(*custom), std::nullopt);
}

TEST(UnitBaseOpTest, WeightOutputChannelAxis) {
  AttributeMap none, trans_b, grouped;
  trans_b.Set("transB", int64_t{1});
  grouped.Set("group", int64_t{2});
  EXPECT_EQ(*WeightOutputChannelAxis(UnitBaseOp::kConv, grouped), 0);
  EXPECT_EQ(*WeightOutputChannelAxis(UnitBaseOp::kGemm, none), 1);
  EXPECT_EQ(*WeightOutputChannelAxis(UnitBaseOp::kGemm, trans_b), 0);
  EXPECT_EQ(*WeightOutputChannelAxis(UnitBaseOp::kMatMul, none), 1);
  EXPECT_EQ(*WeightOutputChannelAxis(UnitBaseOp::kConvTranspose, none), 1);
  EXPECT_EQ(*WeightOutputChannelAxis(UnitBaseOp::kConvTranspose, grouped), -1);
}

TEST(UnitSpecTest, ClampBounds) {
  constexpr float kLowest = std::numeric_limits<float>::lowest(), kMax = std::numeric_limits<float>::max();
  for (UnitActivation a : kActivations) {
    const ClampRange c = SpecOf(UnitBaseOp::kConv, a).ClampBounds();
    switch (a) {
      case UnitActivation::kRelu:
        EXPECT_EQ(c.lo, 0.f);
        EXPECT_EQ(c.hi, kMax);
        break;
      case UnitActivation::kRelu6:
        EXPECT_EQ(c.lo, 0.f);
        EXPECT_EQ(c.hi, 6.f);
        break;
      case UnitActivation::kClip:
        EXPECT_EQ(c.lo, -0.5f);
        EXPECT_EQ(c.hi, 0.75f);
        break;
      default:  // kNone and the non-linear ones: no clamp
        EXPECT_EQ(c.lo, kLowest) << UnitActivationName(a);
        EXPECT_EQ(c.hi, kMax) << UnitActivationName(a);
    }
  }
  EXPECT_EQ(ClipSpec(0.f, 6.f).activation, UnitActivation::kRelu6);
  EXPECT_EQ(ClipSpec(0.f, 6.5f).activation, UnitActivation::kClip);
  EXPECT_EQ(ClipSpec(-1.f, 6.f).activation, UnitActivation::kClip);
}

// A unit node reading x [2, 3, 5, 5] (Conv, ConvTranspose) or [2, 6] (Gemm, MatMul), with
// bias and a residual graph input.
Node* AddUnit(GraphBuilder& b, const UnitSpec& spec) {
  const bool conv = spec.base_op == UnitBaseOp::kConv || spec.base_op == UnitBaseOp::kConvTranspose;
  const std::vector<int64_t> in_dims = conv ? std::vector<int64_t>{2, 3, 5, 5} : std::vector<int64_t>{2, 6};
  const std::vector<int64_t> out_dims = conv ? std::vector<int64_t>{2, 4, 5, 5} : std::vector<int64_t>{2, 4};
  AttributeMap attrs;
  std::vector<int64_t> w_dims;
  switch (spec.base_op) {
    case UnitBaseOp::kConv:
      w_dims = {4, 3, 3, 3};
      attrs.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
      break;
    case UnitBaseOp::kConvTranspose:
      w_dims = {3, 4, 3, 3};
      attrs.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
      break;
    case UnitBaseOp::kGemm:
      w_dims = {4, 6};
      attrs.Set("transB", int64_t{1});
      break;
    case UnitBaseOp::kMatMul: w_dims = {6, 4}; break;
  }
  WriteUnitSpec(spec, &attrs);
  std::vector<Value*> inputs = {b.Input("x", in_dims), b.Random("w", w_dims, -2.f, 2.f), b.Random("bias", {4}),
                                b.Input("skip", out_dims)};
  Node* unit = *b.graph().AddNode(kUnitOpType, "unit", inputs, {"y"}, attrs, kQfuseDomain);
  unit->output(0)->mutable_type() = TensorType{DataType::kFloat32, Shape::FromDims(out_dims), {}};
  b.Output(unit->output(0));
  return unit;
}

// The standard ops a unit expands into, in order.
std::vector<std::string> ExpectedOps(const UnitSpec& spec) {
  std::vector<std::string> ops = {UnitBaseOpName(spec.base_op)};
  if (BiasFollowsBase(spec.base_op)) ops.push_back("Add");
  ops.push_back("Add");  // the residual
  switch (spec.activation) {
    case UnitActivation::kNone: break;
    case UnitActivation::kRelu: ops.push_back("Relu"); break;
    case UnitActivation::kRelu6:
    case UnitActivation::kClip: ops.push_back("Clip"); break;
    case UnitActivation::kHardSwish: ops.push_back("HardSwish"); break;
    case UnitActivation::kHardSigmoid: ops.push_back("HardSigmoid"); break;
    case UnitActivation::kSigmoid: ops.push_back("Sigmoid"); break;
    case UnitActivation::kSilu: ops.insert(ops.end(), {"Sigmoid", "Mul"}); break;
    case UnitActivation::kLeakyRelu: ops.push_back("LeakyRelu"); break;
  }
  return ops;
}

// HardSwish is ONNX's function body, x * HardSigmoid(alpha 1/6, beta 1/2)(x), bit for bit on
// every float in [-4, 4] with step 2^-12 (and the ulp grid around 3): what onnxruntime computes
// for the HardSigmoid + Mul of an opset-13 export and for HardSwish-14. x / 6 + 1/2 (the formula
// before) rounds differently on some of them, which flipped one quantized value of
// MobileNetV3-large in 16 images against onnxruntime.
TEST(UnitSpecTest, HardSwishIsHardSigmoidTimesX) {
  UnitSpec hard_swish{UnitBaseOp::kConv, UnitActivation::kHardSwish};
  UnitSpec hard_sigmoid{UnitBaseOp::kConv, UnitActivation::kHardSigmoid};
  hard_sigmoid.alpha = 1.f / 6.f;
  hard_sigmoid.beta = 0.5f;
  std::vector<float> values;
  for (int i = -4 * 4096; i <= 4 * 4096; ++i) values.push_back(static_cast<float>(i) / 4096.f);
  float v = 2.99f;
  for (int i = 0; i < 100000; ++i, v = std::nextafter(v, 4.f)) values.push_back(v);
  int divided_differs = 0;
  for (float x : values) {
    EXPECT_EQ(ApplyUnitActivation(hard_swish, x), x * ApplyUnitActivation(hard_sigmoid, x)) << x;
    const float divided = x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f));
    divided_differs += divided != ApplyUnitActivation(hard_swish, x);
  }
  EXPECT_GT(divided_differs, 0);  // the two formulas do differ: the check above can fail
}

// The rows (ApplyUnitActivation over a span) equal the one-value form bit for bit, with their
// AVX2 lanes and without, for every activation: the [-4, 4] grid above, the ulp grid around 3,
// large values, infinities, NaN and -0.
TEST(UnitSpecTest, RowsEqualTheOneValueForm) {
  std::vector<float> values = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(), -0.f, 1e30f, -1e30f, 3.f, -3.f};
  for (int i = -4 * 4096; i <= 4 * 4096; ++i) values.push_back(static_cast<float>(i) / 4096.f);
  float v = 2.99f;
  for (int i = 0; i < 20000; ++i, v = std::nextafter(v, 4.f)) values.push_back(v);
  for (UnitActivation a : kActivations) {
    UnitSpec spec{UnitBaseOp::kConv, a};
    spec.alpha = 0.2f;
    spec.beta = 0.45f;
    spec.clip_min = -1.f;
    spec.clip_max = 2.f;
    for (const bool vector : {false, true}) {
      std::vector<float> row = values;
      ApplyUnitActivation(spec, absl::MakeSpan(row), vector && __builtin_cpu_supports("avx2"));
      for (size_t i = 0; i < values.size(); ++i) {
        const float want = ApplyUnitActivation(spec, values[i]);
        uint32_t w, g;
        std::memcpy(&w, &want, 4);
        std::memcpy(&g, &row[i], 4);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(row[i])) << UnitActivationName(a) << " x " << values[i];
        } else {
          EXPECT_EQ(w, g) << UnitActivationName(a) << " x " << values[i] << (vector ? " vector" : "");
        }
      }
    }
  }
}

TEST(UnitSpecTest, WriteThenReadGivesTheSpec) {
  for (UnitBaseOp base : kUnitBaseOps) {
    for (UnitActivation a : kActivations) {
      GraphBuilder b;
      const UnitSpec spec = SpecOf(base, a);
      QFUSE_ASSERT_OK_AND_ASSIGN(UnitSpec read, ReadUnitSpec(*AddUnit(b, spec)));
      EXPECT_EQ(read.base_op, spec.base_op);
      EXPECT_EQ(read.activation, spec.activation);
      EXPECT_EQ(read.ClampBounds().lo, spec.ClampBounds().lo);
      EXPECT_EQ(read.ClampBounds().hi, spec.ClampBounds().hi);
      EXPECT_EQ(read.alpha, spec.alpha);
      EXPECT_EQ(read.beta, spec.beta);
    }
  }
}

TEST(UnitSpecTest, UnknownNamesAreErrors) {
  GraphBuilder b;
  Node* unit = AddUnit(b, SpecOf(UnitBaseOp::kConv, UnitActivation::kRelu));
  unit->mutable_attrs().Set(kUnitActivationAttr, std::string("swish"));
  EXPECT_FALSE(ReadUnitSpec(*unit).ok());
  unit->mutable_attrs().Set(kUnitActivationAttr, std::string("relu"));
  unit->mutable_attrs().Set(kUnitBaseOpAttr, std::string("Einsum"));
  EXPECT_FALSE(ReadUnitSpec(*unit).ok());
}

TEST(ExpandUnitsTest, EveryBaseOpAndActivationWithResidual) {
  for (UnitBaseOp base : kUnitBaseOps) {
    for (UnitActivation a : kActivations) {
      const UnitSpec spec = SpecOf(base, a);
      const std::string label = std::string(UnitBaseOpName(base)) + " " + UnitActivationName(a);
      GraphBuilder b;
      AddUnit(b, spec);
      std::unique_ptr<Graph> expanded = b.graph().Clone();
      QFUSE_ASSERT_OK(ExpandUnits(expanded.get()));
      QFUSE_ASSERT_OK(expanded->Verify());
      QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<Node*> order, expanded->TopologicalOrder());
      std::vector<std::string> ops;
      for (const Node* n : order) ops.push_back(n->op_type());
      EXPECT_EQ(ops, ExpectedOps(spec)) << label;
      EXPECT_EQ(order.front()->name(), "unit") << label << ": the base op keeps the unit's name";
      ASSERT_EQ(expanded->outputs().size(), 1u);
      EXPECT_EQ(expanded->outputs()[0]->name(), "y") << label;

      fusion::EquivalenceOptions options;
      options.random_sets = 2;
      QFUSE_ASSERT_OK_AND_ASSIGN(fusion::EquivalenceReport report,
                                 fusion::CompareGraphsNumerically(b.graph(), *expanded, options));
      EXPECT_GT(report.elements_compared, 0) << label;
      EXPECT_LE(report.max_abs_diff, 1e-5) << label << ": " << report.ToString();
    }
  }
}

}  // namespace
}  // namespace qfuse::ir
