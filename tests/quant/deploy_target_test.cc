// Deploy targets: names, defaults, and the placement each emits on the ResNet-style sample
// (fused with the target's unit forms, calibrated, converted).
#include "quant/deploy_target.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "ir/int8_forms.h"
#include "numerics/threshold_scale.h"
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
  return testing::QuantizeSampleWith("resnet_small", level, calib::ThresholdOptions(), options);
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
    // The symmetric grid everywhere (no unsigned grid for non-negative values): the same values.
    UserChoices symmetric;
    symmetric.unsigned_non_negative = true;
    ConvertOptions no_unsigned;
    no_unsigned.unsigned_non_negative = false;
    QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample as_u8,
                               QuantizeFor(DeployTarget::kQfuse, level, symmetric, no_unsigned));
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

// By default target qfuse puts the values that are non-negative by construction (the Relu
// outputs and the pools of them) on the unsigned grid: zero point 0 and the scale T / 255 of
// the threshold the calibration chose over 256 levels; every other activation keeps the
// symmetric grid (zero point 128, the table's T / 127).
TEST(DeployTargetTest, QfuseNonNegativeValuesTakeTheUnsignedGrid) {
  for (fusion::FusionLevel level : {fusion::FusionLevel::kFull, fusion::FusionLevel::kNone}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample q, QuantizeFor(DeployTarget::kQfuse, level));
    int unsigned_count = 0, symmetric_count = 0;
    for (const ir::Node* n : q.model.graph->nodes()) {
      if (n->op_type() != "QuantizeLinear" || n->input(0)->is_constant()) continue;
      const ir::Value* x = n->input(0);
      const float scale = n->input(1)->initializer()->values<float>()[0];
      const uint8_t zero_point = n->input(2)->initializer()->values<uint8_t>()[0];
      // Through a MaxPool, Reshape or average pool (and the Q/DQ before it) a value is what its
      // input is; its scale is then derived from the input's, not from its own table entry.
      const ir::Value* source = x;
      auto passes_through = [](const ir::Node* p) {
        return p != nullptr && (ir::KeepsInputQuantization(*p) || ir::IsAveragePool(*p) ||
                                p->op_type() == "DequantizeLinear" || p->op_type() == "QuantizeLinear");
      };
      while (passes_through(source->producer())) source = source->producer()->input(0);
      const ir::Node* producer = source->producer();
      bool relu_output = producer != nullptr && producer->op_type() == "Relu";
      if (producer != nullptr && ir::IsUnit(*producer)) {
        QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*producer));
        relu_output = spec.activation == ir::UnitActivation::kRelu;
      }
      const calib::TensorRange* range = source == x ? q.table.Find(x->name()) : nullptr;
      if (zero_point == 0) {
        ++unsigned_count;
        EXPECT_TRUE(relu_output) << n->name();
        if (range != nullptr) {
          EXPECT_EQ(scale, numerics::ScaleOfThreshold(range->threshold, numerics::kUint8Max)) << n->name();
        }
      } else {
        ++symmetric_count;
        EXPECT_EQ(zero_point, 128) << n->name();
        if (range != nullptr) {
          EXPECT_EQ(scale, range->scale) << n->name();
        }
        EXPECT_FALSE(relu_output) << n->name() << " is non-negative by construction";
      }
    }
    EXPECT_EQ(q.stats.unsigned_activations, unsigned_count);
    EXPECT_GT(unsigned_count, 3);
    EXPECT_GT(symmetric_count, 0);  // the graph input and the logits
  }
}

}  // namespace
}  // namespace qfuse::quant
