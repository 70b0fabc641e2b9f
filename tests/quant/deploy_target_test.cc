// Deploy targets: names, defaults, and the placement each emits on the ResNet-style sample
// (fused with the target's unit forms, calibrated, converted).
#include "quant/deploy_target.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "quant/placement_check.h"
#include "quant/qdq_converter.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::quant {
namespace {

absl::StatusOr<testing::QuantizedSample> QuantizeFor(DeployTarget target, fusion::FusionLevel level,
                                                     UserChoices chosen = {}, ConvertOptions options = {}) {
  options.target = target;
  options = WithTargetDefaults(options, chosen);
  calib::ThresholdOptions threshold;
  if (options.activation_type == ActivationType::kUint8) threshold.num_quantized_bins = 256;
  return testing::QuantizeSampleWith("resnet_small", level, threshold, options);
}

bool Is(const ir::Node* n, const char* op) { return n != nullptr && n->op_type() == op; }

TEST(DeployTargetTest, NamesRoundTripAndTyposAreRefused) {
  for (DeployTarget t : {DeployTarget::kQfuse, DeployTarget::kOnnxRuntime, DeployTarget::kTensorRt}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(DeployTarget parsed, ParseDeployTarget(DeployTargetName(t)));
    EXPECT_EQ(parsed, t);
  }
  absl::StatusOr<DeployTarget> bad = ParseDeployTarget("ort");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'ort'"), std::string::npos);
}

TEST(DeployTargetTest, DefaultsApplyOnlyWhereTheUserChoseNothing) {
  ConvertOptions options;
  options.target = DeployTarget::kOnnxRuntime;
  ConvertOptions ort = WithTargetDefaults(options, {});
  EXPECT_EQ(ort.activation_type, ActivationType::kUint8);
  EXPECT_TRUE(ort.reduce_range);
  UserChoices chosen;
  chosen.activation_type = chosen.reduce_range = true;  // the user's int8 and 8-bit weights win
  ConvertOptions kept = WithTargetDefaults(options, chosen);
  EXPECT_EQ(kept.activation_type, ActivationType::kInt8);
  EXPECT_FALSE(kept.reduce_range);
  for (DeployTarget t : {DeployTarget::kQfuse, DeployTarget::kTensorRt}) {
    options.target = t;
    options.activation_type = ActivationType::kUint8;
    options.reduce_range = true;
    ConvertOptions d = WithTargetDefaults(options, {});
    EXPECT_EQ(d.activation_type, ActivationType::kInt8) << DeployTargetName(t);
    EXPECT_FALSE(d.reduce_range) << DeployTargetName(t);
  }
  EXPECT_TRUE(UnitFormsFor(DeployTarget::kQfuse).residual_add);
  EXPECT_TRUE(UnitFormsFor(DeployTarget::kTensorRt).residual_add);
  EXPECT_FALSE(UnitFormsFor(DeployTarget::kOnnxRuntime).residual_add);
}

// onnxruntime: each conv ends at its own Q (no residual in a unit), each residual Add reads two
// DequantizeLinear outputs and feeds its Relu directly, whose output is quantized with uint8 zero
// point 0 (onnxruntime then drops the Relu into QLinearAdd); weights are within [-64, 64].
TEST(DeployTargetTest, OnnxRuntimePlacement) {
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample q, QuantizeFor(DeployTarget::kOnnxRuntime,
                                                                      fusion::FusionLevel::kFull));
  int units = 0, residual_adds = 0;
  for (const ir::Node* n : q.model.graph->nodes()) {
    if (ir::IsUnit(*n)) {
      ++units;
      EXPECT_EQ(n->input(ir::kUnitResidual), nullptr) << n->Describe();
      const ir::Tensor& w = *n->input(ir::kUnitW)->producer()->input(0)->initializer();
      for (int8_t v : w.values<int8_t>()) ASSERT_LE(std::abs(v), 64) << n->Describe();
    }
    if (!Is(n, "Add")) continue;
    ++residual_adds;
    EXPECT_TRUE(Is(n->input(0)->producer(), "DequantizeLinear")) << n->Describe();
    EXPECT_TRUE(Is(n->input(1)->producer(), "DequantizeLinear")) << n->Describe();
    ASSERT_EQ(n->output(0)->uses().size(), 1u) << n->Describe();
    const ir::Node* relu = n->output(0)->uses()[0].node;
    ASSERT_TRUE(Is(relu, "Relu")) << n->Describe();
    for (const ir::Use& use : relu->output(0)->uses()) {
      ASSERT_TRUE(Is(use.node, "QuantizeLinear")) << relu->Describe();
      const ir::Tensor& zero_point = *use.node->input(2)->initializer();
      EXPECT_EQ(zero_point.dtype(), ir::DataType::kUint8);
      EXPECT_EQ(zero_point.values<uint8_t>()[0], 0);
    }
  }
  EXPECT_EQ(units, 12);
  EXPECT_EQ(residual_adds, 4);
  EXPECT_EQ(q.stats.float_ops, 0);
}

// tensorrt: the full level's units, symmetric int8, float biases, float -> Q -> DQ weights; the
// converter checks the rules itself, and the test checks them again on the exported ops.
TEST(DeployTargetTest, TensorRtPlacement) {
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample q, QuantizeFor(DeployTarget::kTensorRt,
                                                                      fusion::FusionLevel::kFull));
  std::unique_ptr<ir::Graph> exported = q.model.graph->Clone();
  QFUSE_ASSERT_OK(ir::ExpandUnits(exported.get()));
  QFUSE_EXPECT_OK(CheckTensorRtPlacement(*exported));
  int weighted = 0;
  for (const ir::Node* n : exported->nodes()) {
    for (const ir::Value* v : n->inputs()) {
      if (v != nullptr) EXPECT_NE(v->type().dtype, ir::DataType::kInt32) << n->Describe();
    }
    if (!Is(n, "Conv") && !Is(n, "Gemm")) continue;
    ++weighted;
    ASSERT_NE(n->input(2), nullptr) << n->Describe();
    EXPECT_TRUE(n->input(2)->is_constant()) << n->Describe();
    const ir::Node* q_weight = n->input(1)->producer()->input(0)->producer();
    ASSERT_TRUE(Is(q_weight, "QuantizeLinear")) << n->Describe();
    EXPECT_EQ(q_weight->input(0)->type().dtype, ir::DataType::kFloat32);
  }
  EXPECT_EQ(weighted, 12);
  // The same model for qfuse stores int32 biases: not TensorRT's form.
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample own, QuantizeFor(DeployTarget::kQfuse,
                                                                        fusion::FusionLevel::kFull));
  std::unique_ptr<ir::Graph> own_exported = own.model.graph->Clone();
  QFUSE_ASSERT_OK(ir::ExpandUnits(own_exported.get()));
  EXPECT_EQ(CheckTensorRtPlacement(*own_exported).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DeployTargetTest, TensorRtRefusesUint8Activations) {
  UserChoices chosen;
  chosen.activation_type = true;
  ConvertOptions options;
  options.activation_type = ActivationType::kUint8;
  absl::StatusOr<testing::QuantizedSample> q =
      QuantizeFor(DeployTarget::kTensorRt, fusion::FusionLevel::kFull, chosen, options);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("tensorrt takes int8 activations"), std::string::npos) << q.status();
}

// Target qfuse stores its int8 activations as UINT8 with zero point 128 by default: the same
// grid, so the integer runtime gives the same bytes shifted by 128 on every output, and the
// float outputs of the two files are equal bit for bit.
TEST(DeployTargetTest, QfuseStoresInt8AsUint8WithTheSameValues) {
  for (fusion::FusionLevel level : {fusion::FusionLevel::kFull, fusion::FusionLevel::kBn}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample as_u8, QuantizeFor(DeployTarget::kQfuse, level));
    UserChoices chosen;
    chosen.int8_as_uint8 = true;
    ConvertOptions s8;
    s8.int8_as_uint8 = false;
    QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample as_s8, QuantizeFor(DeployTarget::kQfuse, level, chosen, s8));
    int activations = 0;
    for (const ir::Node* n : as_u8.model.graph->nodes()) {
      if (n->op_type() != "QuantizeLinear" || n->input(0)->is_constant()) continue;
      ++activations;
      const ir::Tensor* zp = n->input(2)->initializer();
      ASSERT_NE(zp, nullptr);
      ASSERT_EQ(zp->dtype(), ir::DataType::kUint8) << n->name();
      EXPECT_EQ(zp->values<uint8_t>()[0], 128) << n->name();
    }
    EXPECT_GT(activations, 3);
    for (const ir::Node* n : as_s8.model.graph->nodes()) {
      if (n->op_type() == "QuantizeLinear" && !n->input(0)->is_constant()) {
        EXPECT_EQ(n->input(2)->initializer()->dtype(), ir::DataType::kInt8) << n->name();
      }
    }
    runtime::RandomInputOptions random;
    random.batch = 4;
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> inputs, runtime::RandomInputs(*as_u8.model.graph, random));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto run_u8, runtime::Executor::Create(*as_u8.model.graph));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto run_s8, runtime::Executor::Create(*as_s8.model.graph));
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> out_u8, run_u8->Run(inputs));
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> out_s8, run_s8->Run(inputs));
    ASSERT_EQ(out_u8.size(), out_s8.size());
    for (size_t i = 0; i < out_u8.size(); ++i) {
      absl::Span<const float> a = out_u8[i].tensor.values<float>();
      absl::Span<const float> b = out_s8[i].tensor.values<float>();
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) ASSERT_EQ(a[k], b[k]) << fusion::FusionLevelName(level) << " " << k;
    }
  }
}

}  // namespace
}  // namespace qfuse::quant
