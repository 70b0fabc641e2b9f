// The committed opset-9 model (made by models/make_opset9_model.py: torch export, every
// weight moved into a Constant node; Clip/Unsqueeze/Squeeze/ReduceSum attributes,
// Upsample) loads, runs to PyTorch's stored output, and round-trips at opset 9 and
// raised to opset 13 with identical graphs and bit-identical weights.
#include <map>

#include "gtest/gtest.h"
#include "ir/graph_compare.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "runtime/executor.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

constexpr char kDir[] = "tests/testdata/opset9_constant_weights";

TEST(Opset9ModelTest, ConstantNodesBecomeConstantsAndOutputsMatch) {
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase(kDir));
  EXPECT_EQ(tc.model.opset, 9);
  std::map<std::string, int> ops;
  for (const Node* n : tc.model.graph->nodes()) ++ops[n->op_type()];
  EXPECT_EQ(ops.count("Constant"), 0u);
  EXPECT_EQ(ops.count("Upsample"), 0u);
  EXPECT_EQ(ops["Resize"], 1);
  EXPECT_GE(tc.model.graph->constants().size(), 16u);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, runtime::Executor::Create(*tc.model.graph));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto outputs, exec->Run(tc.inputs));
  QFUSE_EXPECT_OK(testing::CompareOutputs(tc.expected, outputs, 1e-4, 1e-5));
}

TEST(Opset9ModelTest, RoundTripsAtNineAndRaisedToThirteen) {
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase(kDir));
  for (int64_t opset : {9, 13}) {
    SCOPED_TRACE(opset);
    ExportOptions options;
    options.opset = opset;
    QFUSE_ASSERT_OK_AND_ASSIGN(onnx::ModelProto proto, ExportModel(tc.model, options));
    EXPECT_EQ(proto.opset_import(0).version(), opset);
    QFUSE_ASSERT_OK_AND_ASSIGN(Model again, ImportModel(proto, "", "re-imported"));
    QFUSE_EXPECT_OK(CompareGraphs(*tc.model.graph, *again.graph));
    // The re-imported model computes the same output.
    QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, runtime::Executor::Create(*again.graph));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto outputs, exec->Run(tc.inputs));
    QFUSE_EXPECT_OK(testing::CompareOutputs(tc.expected, outputs, 1e-4, 1e-5));
  }
}

}  // namespace
}  // namespace qfuse::ir
