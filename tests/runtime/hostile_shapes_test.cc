// Issue 13 F1: shapes whose element count wraps int64. Reshape(x, [2^62 + 196, 4]) has a
// wrapped count of 784, the size of a 1x1x28x28 input; followed by Gather, Slice or
// Transpose it used to index memory that does not exist (SIGSEGV), and ConstantOfShape /
// Expand did the same on their own. Each whole model must import and then be refused at
// run time with a one-line error that names the node and says the shape overflows.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/onnx_import.h"
#include "ir/tensor_proto.h"
#include "runtime/executor.h"
#include "tests/testing/onnx_proto_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse {
namespace {

using testing::AddIntsAttr;
using testing::AddNode;
using testing::SetFloatInfo;

constexpr int64_t kWrapsTo784 = (int64_t{1} << 62) + 196;  // 4 * this == 784 mod 2^64

void AddInt64s(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  ir::TensorToProto(ir::Tensor::FromVector<int64_t>({n}, values), name, g->add_initializer());
}

// x FLOAT[1,1,28,28] -> `build` adds the nodes that end in "y".
template <typename Build>
onnx::ModelProto Model(Build build) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("hostile");
  SetFloatInfo(g->add_input(), "x", {1, 1, 28, 28});
  build(g);
  onnx::ValueInfoProto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (const char* symbol : {"rows", "cols"}) {
    y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param(symbol);
  }
  return m;
}

struct Case {
  std::string name;
  onnx::ModelProto model;
  std::string node;  // the node the error must name
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  auto reshaped = [](onnx::GraphProto* g) {
    AddInt64s(g, "shape", {kWrapsTo784, 4});
    AddNode(g, "Reshape", {"x", "shape"}, {"r"})->set_name("wrapping_reshape");
  };
  cases.push_back({"ReshapeGather", Model([&](onnx::GraphProto* g) {
                     reshaped(g);
                     AddInt64s(g, "indices", {1000000});
                     AddNode(g, "Gather", {"r", "indices"}, {"y"})->set_name("gather");
                   }),
                   "wrapping_reshape"});
  cases.push_back({"ReshapeSlice", Model([&](onnx::GraphProto* g) {
                     reshaped(g);
                     AddInt64s(g, "starts", {1000000});
                     AddInt64s(g, "ends", {1000010});
                     AddNode(g, "Slice", {"r", "starts", "ends"}, {"y"})->set_name("slice");
                   }),
                   "wrapping_reshape"});
  cases.push_back({"ReshapeTranspose", Model([&](onnx::GraphProto* g) {
                     reshaped(g);
                     AddIntsAttr(AddNode(g, "Transpose", {"r"}, {"y"}), "perm", {1, 0});
                   }),
                   "wrapping_reshape"});
  cases.push_back({"ConstantOfShape", Model([&](onnx::GraphProto* g) {
                     AddInt64s(g, "fill_shape", {kWrapsTo784, 4});
                     AddNode(g, "ConstantOfShape", {"fill_shape"}, {"c"})->set_name("fill");
                     AddNode(g, "Add", {"c", "c"}, {"y"});
                   }),
                   "fill"});
  cases.push_back({"Expand", Model([&](onnx::GraphProto* g) {
                     AddInt64s(g, "flat", {1, 784});
                     AddNode(g, "Reshape", {"x", "flat"}, {"r"});
                     AddInt64s(g, "expand_shape", {(int64_t{1} << 62) + 1, 784});
                     AddNode(g, "Expand", {"r", "expand_shape"}, {"y"})->set_name("expand");
                   }),
                   "expand"});
  return cases;
}

TEST(HostileShapesTest, WrappingElementCountsAreOneLineErrorsNamingTheNode) {
  ir::Tensor x(ir::DataType::kFloat32, {1, 1, 28, 28});
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ir::Model> model = ir::ImportModel(c.model, "", c.name + ".onnx");
    if (!model.ok()) {  // refusing at import is as good as refusing at run time
      EXPECT_NE(model.status().message().find("overflows int64"), std::string::npos) << model.status();
      continue;
    }
    QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::Executor> exec, runtime::Executor::Create(*model->graph));
    absl::StatusOr<std::vector<ir::NamedTensor>> out = exec->Run({{"x", x}});
    ASSERT_FALSE(out.ok()) << "ran and produced " << ir::DimsToString((*out)[0].tensor.dims());
    const std::string message(out.status().message());
    EXPECT_NE(message.find(c.node), std::string::npos) << message;
    EXPECT_NE(message.find("overflows int64"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace qfuse
