// TensorRT's placement rules (quant/placement_check.h): the converter's tensorrt output passes;
// each rule, broken by hand in a copy of that output, fails naming the node and the rule.
#include "quant/placement_check.h"

#include <functional>
#include <string>

#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "ir/onnx_import.h"
#include "quant/qdq_converter.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::quant {
namespace {

bool Is(const ir::Node* n, const char* op) { return n != nullptr && n->op_type() == op; }

class PlacementCheckTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ConvertOptions options;
    options.target = DeployTarget::kTensorRt;
    absl::StatusOr<testing::QuantizedSample> q =
        testing::QuantizeSampleWith("resnet_small", fusion::FusionLevel::kFull, calib::ThresholdOptions(), options);
    ASSERT_TRUE(q.ok()) << q.status();
    model_ = new ir::Model(std::move(q->model));
    ASSERT_TRUE(ir::ExpandUnits(model_->graph.get()).ok());
  }
  static void TearDownTestSuite() { delete model_; }

  // A copy of the exported tensorrt graph with `edit` applied; the check's status.
  static absl::Status CheckEdited(const std::function<void(ir::Graph&)>& edit) {
    std::unique_ptr<ir::Graph> g = model_->graph->Clone();
    edit(*g);
    return CheckTensorRtPlacement(*g);
  }

  static ir::Model* model_;
};

ir::Model* PlacementCheckTest::model_ = nullptr;

void ExpectBroken(const absl::Status& status, const std::string& rule) {
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find(rule), std::string::npos) << status;
}

TEST_F(PlacementCheckTest, ConverterOutputPasses) { QFUSE_EXPECT_OK(CheckTensorRtPlacement(*model_->graph)); }

// Every unit kept float but one (as the per-layer analysis converts): the float units' Adds read
// float residuals, which binds nothing; the one quantized unit still follows the rules.
TEST(PlacementCheckPartialTest, UnitsKeptFloatPass) {
  ConvertOptions options;
  options.target = DeployTarget::kTensorRt;
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model fused, ir::LoadModel("models/mobilenetv2_small/model.onnx"));
  QFUSE_ASSERT_OK(fusion::Fuse(&fused, fusion::FusionLevel::kFull).status());
  int units = 0;
  for (const ir::Node* n : fused.graph->nodes()) {
    if (!ir::IsUnit(*n)) continue;
    if (units++ > 0) options.keep_float.insert(n->name());
  }
  ASSERT_GT(units, 2);
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample q, testing::QuantizeSampleWith("mobilenetv2_small",
      fusion::FusionLevel::kFull, calib::ThresholdOptions(), options));  // runs the check itself
  QFUSE_ASSERT_OK(ir::ExpandUnits(q.model.graph.get()));
  QFUSE_EXPECT_OK(CheckTensorRtPlacement(*q.model.graph));
}

// Attention's MatMul of two activations (x times its transpose) has no weight: the tensorrt
// conversion quantizes both inputs, and the check takes both from DequantizeLinears (it refused
// every transformer before: ViT-tiny, the CRNN, PaddleOCR's recogniser). The first input read
// unquantized fails; with the second unquantized the MatMul is a float op (TensorRT's to run in
// float), which binds nothing.
TEST(PlacementCheckActivationMatMulTest, BothInputsDequantized) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 4, 8});
  ir::Value* xt =
      b.Op("Transpose", {x}, "xt", {2, 8, 4}, testing::GraphBuilder::Attrs({{"perm", std::vector<int64_t>{0, 2, 1}}}));
  b.Output(b.Op("MatMul", {x, xt}, "y", {2, 4, 4}));
  QFUSE_ASSERT_OK(fusion::Fuse(&b.model(), fusion::FusionLevel::kFull).status());
  calib::CalibrationTable table;
  for (const char* name : {"x", "xt", "y"}) table.tensors.push_back({name, 2.f, 2.f / 127, -2.f, 2.f, "max", ""});
  ConvertOptions options;
  options.target = DeployTarget::kTensorRt;
  QFUSE_ASSERT_OK(ConvertToQdq(&b.model(), table, options).status());  // runs the check itself
  QFUSE_ASSERT_OK(ir::ExpandUnits(&b.graph()));
  QFUSE_ASSERT_OK(CheckTensorRtPlacement(b.graph()));
  ir::Node* matmul = nullptr;
  for (ir::Node* n : b.graph().nodes()) {
    if (Is(n, "MatMul")) matmul = n;
  }
  ASSERT_NE(matmul, nullptr);
  for (int side : {0, 1}) {
    const ir::Node* dq = matmul->input(side)->producer();
    ASSERT_TRUE(Is(dq, "DequantizeLinear")) << side;
    std::unique_ptr<ir::Graph> g = b.graph().Clone();
    ir::Node* copy = nullptr;
    for (ir::Node* n : g->nodes()) {
      if (n->name() == matmul->name()) copy = n;
    }
    g->SetInput(copy, side, g->FindValue(side == 0 ? "x" : "xt"));  // the float value, not its DQ
    if (side == 0) {
      ExpectBroken(CheckTensorRtPlacement(*g), "both inputs of a MatMul of two activations");
    } else {
      QFUSE_EXPECT_OK(CheckTensorRtPlacement(*g));
    }
  }
}

TEST_F(PlacementCheckTest, NonZeroZeroPointFails) {
  ExpectBroken(CheckEdited([](ir::Graph& g) {
                 for (ir::Node* n : g.nodes()) {
                   if (!Is(n, "QuantizeLinear") || n->input(0)->is_constant()) continue;
                   g.SetConstantData(n->input(2), ir::Tensor::Scalar<int8_t>(3));
                   return;
                 }
               }),
               "zero points must be 0");
}

TEST_F(PlacementCheckTest, WeightScalesOnTheWrongAxisFail) {
  ExpectBroken(CheckEdited([](ir::Graph& g) {
                 for (ir::Node* n : g.nodes()) {
                   if (!Is(n, "Conv")) continue;
                   n->input(1)->producer()->mutable_attrs().Set("axis", int64_t{1});
                   return;
                 }
               }),
               "along axis 0");
}

TEST_F(PlacementCheckTest, ResidualWithoutDequantizeFails) {
  // The residual Add's DQ operand replaced by the float value its QuantizeLinear reads.
  ExpectBroken(CheckEdited([](ir::Graph& g) {
                 for (ir::Node* n : g.nodes()) {
                   if (!Is(n, "Add")) continue;
                   for (int side = 0; side < 2; ++side) {
                     const ir::Node* dq = n->input(side)->producer();
                     if (!Is(dq, "DequantizeLinear")) continue;
                     g.SetInput(n, side, dq->input(0)->producer()->input(0));
                     return;
                   }
                 }
               }),
               "residual input");
}

TEST_F(PlacementCheckTest, QuantizeBetweenConvAndReluFails) {
  // Conv -> Relu becomes Conv -> Q -> DQ -> Relu, with valid int8 parameters.
  ExpectBroken(CheckEdited([](ir::Graph& g) {
                 for (ir::Node* relu : g.nodes()) {
                   if (!Is(relu, "Relu") || !Is(relu->input(0)->producer(), "Conv")) continue;
                   ir::Value* acc = relu->input(0);
                   ir::Value* scale = *g.AddConstant("edit_scale", ir::Tensor::Scalar<float>(0.1f));
                   ir::Value* zero = *g.AddConstant("edit_zero", ir::Tensor::Scalar<int8_t>(0));
                   ir::Node* q = *g.AddNode("QuantizeLinear", "edit_q", {acc, scale, zero}, {"edit_q_out"});
                   q->output(0)->mutable_type() = ir::TensorType{ir::DataType::kInt8, acc->type().shape, {}};
                   ir::Node* dq = *g.AddNode("DequantizeLinear", "edit_dq", {q->output(0), scale, zero}, {"edit_dq_out"});
                   dq->output(0)->mutable_type() = acc->type();
                   g.SetInput(relu, 0, dq->output(0));
                   return;
                 }
               }),
               "that TensorRT fuses into it");
}

TEST_F(PlacementCheckTest, DequantizedBiasFails) {
  // A Conv bias behind DequantizeLinear (qfuse's own int32 form) is not TensorRT's.
  ExpectBroken(CheckEdited([](ir::Graph& g) {
                 for (ir::Node* n : g.nodes()) {
                   if (!Is(n, "Conv") || n->input(2) == nullptr) continue;
                   g.SetInput(n, 2, n->input(1));  // any DequantizeLinear output stands in
                   return;
                 }
               }),
               "bias must be a FLOAT constant");
}

}  // namespace
}  // namespace qfuse::quant
