// The float unit kernel against its expansion into standard ops (ir::ExpandUnits) on
// random inputs, for every activation, with and without residual.
#include <string>
#include <vector>

#include "fusion/equivalence.h"
#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::kernels {
namespace {

using testing::GraphBuilder;

struct UnitCase {
  ir::UnitActivation activation;
  ir::UnitBaseOp base_op;  // kConv or kMatMul
  bool residual;
};

std::string CaseName(const ::testing::TestParamInfo<UnitCase>& info) {
  return std::string(ir::UnitActivationName(info.param.activation)) + "_" + ir::UnitBaseOpName(info.param.base_op) +
         (info.param.residual ? "_residual" : "");
}

class QuantUnitKernelTest : public ::testing::TestWithParam<UnitCase> {};

TEST_P(QuantUnitKernelTest, EqualsExpandedStandardOps) {
  const UnitCase& tc = GetParam();
  GraphBuilder b;
  ir::UnitSpec spec;
  spec.base_op = tc.base_op;
  spec.activation = tc.activation;
  spec.clip_min = -0.5f;
  spec.clip_max = 0.75f;
  if (tc.activation == ir::UnitActivation::kRelu6) {
    spec.clip_min = 0.f;
    spec.clip_max = 6.f;
  }
  spec.alpha = tc.activation == ir::UnitActivation::kLeakyRelu ? 0.1f : 0.3f;
  spec.beta = 0.4f;
  ir::AttributeMap attrs;
  std::vector<int64_t> in_dims, out_dims;
  std::vector<ir::Value*> inputs;
  if (tc.base_op == ir::UnitBaseOp::kConv) {
    in_dims = {-1, 3, 5, 5};
    out_dims = {-1, 4, 5, 5};
    attrs.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    inputs = {b.Input("x", in_dims), b.Random("w", {4, 3, 3, 3}, -2.f, 2.f), b.Random("bias", {4})};
  } else {
    in_dims = {-1, 6};
    out_dims = {-1, 5};
    inputs = {b.Input("x", in_dims), b.Random("w", {6, 5}, -2.f, 2.f), b.Random("bias", {5})};
  }
  if (tc.residual) inputs.push_back(b.Input("skip", out_dims));
  ir::WriteUnitSpec(spec, &attrs);
  ir::Node* unit = *b.graph().AddNode(ir::kUnitOpType, "unit", inputs, {"y"}, attrs, ir::kQfuseDomain);
  unit->output(0)->mutable_type() = ir::TensorType{ir::DataType::kFloat32, inputs[0]->type().shape, {}};
  unit->output(0)->mutable_type().shape.dims[1] = ir::Dim::Known(out_dims[1]);
  b.Output(unit->output(0));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec read, ir::ReadUnitSpec(*unit));
  EXPECT_EQ(read.activation, tc.activation);

  std::unique_ptr<ir::Graph> expanded = b.graph().Clone();
  QFUSE_ASSERT_OK(ir::ExpandUnits(expanded.get()));
  for (const ir::Node* n : expanded->nodes()) EXPECT_FALSE(ir::IsUnit(*n));
  fusion::EquivalenceOptions options;
  options.random_sets = 3;
  QFUSE_ASSERT_OK_AND_ASSIGN(fusion::EquivalenceReport report,
                             fusion::CompareGraphsNumerically(b.graph(), *expanded, options));
  EXPECT_GT(report.elements_compared, 0);
  EXPECT_LE(report.max_abs_diff, 1e-6) << report.ToString();
}

std::vector<UnitCase> AllCases() {
  std::vector<UnitCase> cases;
  for (ir::UnitActivation a :
       {ir::UnitActivation::kNone, ir::UnitActivation::kRelu, ir::UnitActivation::kRelu6, ir::UnitActivation::kClip,
        ir::UnitActivation::kHardSwish, ir::UnitActivation::kHardSigmoid, ir::UnitActivation::kSigmoid,
        ir::UnitActivation::kSilu, ir::UnitActivation::kLeakyRelu}) {
    for (ir::UnitBaseOp base : {ir::UnitBaseOp::kConv, ir::UnitBaseOp::kMatMul}) {
      for (bool residual : {false, true}) cases.push_back({a, base, residual});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Activations, QuantUnitKernelTest, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace qfuse::runtime::kernels
