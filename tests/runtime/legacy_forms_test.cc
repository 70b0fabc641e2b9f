// Legacy operator forms that real exporters emit, imported and run end to end: an opset-11
// Softmax behind a Reshape whose shape is computed at run time (Shape -> Gather -> Unsqueeze
// -> Concat), as paddle2onnx, tf2onnx and older PyTorch write it. ONNX shape inference leaves
// the Softmax input's rank unknown; the model must still import (it used to be refused) and
// match a hand-computed softmax over the flattened trailing axes at every batch size.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "ir/onnx_import.h"
#include "ir/tensor_proto.h"
#include "runtime/executor.h"
#include "tests/testing/onnx_proto_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse {
namespace {

using testing::AddNode;

void AddInts(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v, bool single = false) {
  auto* a = n->add_attribute();
  a->set_name(name);
  if (single) {
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v[0]);
    return;
  }
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void AddInitializer(onnx::GraphProto* g, const std::string& name, const ir::Tensor& t) {
  ir::TensorToProto(t, name, g->add_initializer());
}

// x [N, 2, 3] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) -> [N, 6]
// -> Softmax(axis=`axis`) at opset `opset` (before 13: coerced to 2-D at `axis`).
onnx::ModelProto RuntimeShapedSoftmax(int64_t opset, int64_t axis, const std::string& op) {
  onnx::ModelProto m;
  m.set_ir_version(6);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("legacy_softmax");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  AddInitializer(g, "zero", ir::Tensor::FromVector<int64_t>({}, std::vector<int64_t>{0}));
  AddInitializer(g, "minus_one", ir::Tensor::FromVector<int64_t>({1}, std::vector<int64_t>{-1}));
  AddNode(g, "Shape", {"x"}, {"shape"});
  AddNode(g, "Gather", {"shape", "zero"}, {"batch"});
  if (opset >= 13) {
    AddInitializer(g, "axes", ir::Tensor::FromVector<int64_t>({1}, std::vector<int64_t>{0}));
    AddNode(g, "Unsqueeze", {"batch", "axes"}, {"batch_1d"});
  } else {
    AddInts(AddNode(g, "Unsqueeze", {"batch"}, {"batch_1d"}), "axes", {0});
  }
  AddInts(AddNode(g, "Concat", {"batch_1d", "minus_one"}, {"target"}), "axis", {0}, true);
  AddNode(g, "Reshape", {"x", "target"}, {"flat"});
  AddInts(AddNode(g, op, {"flat"}, {"y"}), "axis", {axis}, true);
  auto* out = g->add_output();
  out->set_name("y");
  auto* out_type = out->mutable_type()->mutable_tensor_type();
  out_type->set_elem_type(onnx::TensorProto::FLOAT);
  out_type->mutable_shape()->add_dim()->set_dim_param("N");
  out_type->mutable_shape()->add_dim()->set_dim_param("M");
  return m;
}

// Softmax (or LogSoftmax) of each row of `x` viewed as [rows, cols].
std::vector<float> RowSoftmax(const std::vector<float>& x, int64_t rows, int64_t cols, bool log) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max<double>(mx, x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(double{x[r * cols + c]} - mx);
    for (int64_t c = 0; c < cols; ++c) {
      const double v = double{x[r * cols + c]} - mx;
      y[r * cols + c] = static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
    }
  }
  return y;
}

class RuntimeShapedSoftmaxTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, const char*>> {};

TEST_P(RuntimeShapedSoftmaxTest, ImportsAndRunsAtEveryBatch) {
  const auto [opset, axis, op] = GetParam();
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, ir::ImportModel(RuntimeShapedSoftmax(opset, axis, op), "", "legacy.onnx"));
  // The condition of the original failure: shape inference could not tell the rank.
  const ir::Value* flat = model.graph->FindValue("flat");
  ASSERT_NE(flat, nullptr);
  EXPECT_FALSE(flat->type().shape.rank_known);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto executor, runtime::Executor::Create(*model.graph));
  const bool log = std::string(op) == "LogSoftmax";
  for (int64_t n : {1, 3}) {
    SCOPED_TRACE(n);
    std::vector<float> x(n * 6);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.37f * static_cast<float>(i % 7) - 0.9f * static_cast<float>(i % 3);
    QFUSE_ASSERT_OK_AND_ASSIGN(auto outputs,
                               executor->Run({{"x", ir::Tensor::FromVector<float>({n, 2, 3}, x)}}));
    ASSERT_EQ(outputs.size(), 1u);
    const ir::Tensor& y = outputs[0].tensor;
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{n, 6}));
    // Old semantics on the [N, 6] input: axis 1 (or -1) is a softmax over each row of 6; axis 0
    // coerces the whole tensor to one row of 6N.
    const int64_t rows = axis == 0 ? 1 : n;
    const std::vector<float> want = RowSoftmax(x, rows, n * 6 / rows, log);
    for (int64_t i = 0; i < n * 6; ++i) EXPECT_NEAR(y.data<float>()[i], want[i], 1e-6) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Opsets, RuntimeShapedSoftmaxTest,
                         ::testing::Values(std::make_tuple(int64_t{11}, int64_t{1}, "Softmax"),
                                           std::make_tuple(int64_t{9}, int64_t{1}, "Softmax"),
                                           std::make_tuple(int64_t{11}, int64_t{-1}, "LogSoftmax"),
                                           std::make_tuple(int64_t{11}, int64_t{0}, "Softmax"),
                                           std::make_tuple(int64_t{13}, int64_t{1}, "Softmax")));

}  // namespace
}  // namespace qfuse
