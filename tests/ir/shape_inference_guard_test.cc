// The guard in front of ONNX 1.12's shape inference: a Conv whose data has fewer spatial
// axes than its weights (found by the model fuzzer: a SEGV inside libonnx) is now ONNX's
// own error; the guard writes the weights' spatial dims as kernel_shape, also through a
// DequantizeLinear, and refuses weights with fewer than 3 dims.
#include "ir/shape_inference_guard.h"

#include "gtest/gtest.h"
#include "ir/onnx_import.h"
#include "ir/tensor_proto.h"
#include "tests/testing/onnx_proto_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

using testing::AddNode;
using testing::SetFloatInfo;

// x -> Conv(x, DequantizeLinear(w_q)) with x of `x_dims` and int8 weights of `w_dims`.
onnx::ModelProto ConvThroughDequantize(std::vector<int64_t> x_dims, std::vector<int64_t> w_dims) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("guard");
  SetFloatInfo(g->add_input(), "x", x_dims);
  TensorToProto(Tensor(DataType::kInt8, w_dims), "w_q", g->add_initializer());
  TensorToProto(Tensor::Scalar<float>(0.5f), "w_s", g->add_initializer());
  AddNode(g, "DequantizeLinear", {"w_q", "w_s"}, {"w"});
  AddNode(g, "Conv", {"x", "w"}, {"y"})->set_name("conv");
  onnx::ValueInfoProto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (const char* symbol : {"n", "c", "h", "w"}) {
    y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param(symbol);
  }
  return m;
}

std::vector<int64_t> KernelShape(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == "kernel_shape") return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

TEST(ShapeInferenceGuardTest, WritesKernelShapeFromWeightsBehindDequantize) {
  onnx::ModelProto m = ConvThroughDequantize({1, 2, 5, 5}, {4, 2, 3, 1});
  QFUSE_ASSERT_OK(GuardShapeInference(m.mutable_graph()));
  EXPECT_EQ(KernelShape(m.graph().node(1)), (std::vector<int64_t>{3, 1}));
  QFUSE_ASSERT_OK_AND_ASSIGN(Model model, ImportModel(ConvThroughDequantize({1, 2, 5, 5}, {4, 2, 3, 1}), "", "ok"));
  EXPECT_EQ(model.graph->outputs()[0]->type().shape.dims.size(), 4u);
}

TEST(ShapeInferenceGuardTest, DataWithTooFewAxesIsNoLongerACrash) {
  // Without the guard libonnx reads dilations[0] and [1] of an empty vector here.
  onnx::ModelProto m = ConvThroughDequantize({1, 2}, {2, 2, 3, 3});
  QFUSE_ASSERT_OK(GuardShapeInference(m.mutable_graph()));
  EXPECT_EQ(KernelShape(m.graph().node(1)), (std::vector<int64_t>{3, 3}));
  absl::StatusOr<Model> model = ImportModel(std::move(m), "", "fuzzed.onnx");
  if (!model.ok()) {
    EXPECT_NE(model.status().message().find("fuzzed.onnx:"), std::string::npos) << model.status();
  }
}

TEST(ShapeInferenceGuardTest, WeightsWithFewerThanThreeDimsAreRefused) {
  onnx::ModelProto m = ConvThroughDequantize({1, 2, 5, 5}, {2, 2});
  EXPECT_EQ(GuardShapeInference(m.mutable_graph()).message(),
            "node 'conv' (Conv): weights 'w' have 2 dims, expected at least 3");
}

}  // namespace
}  // namespace qfuse::ir
