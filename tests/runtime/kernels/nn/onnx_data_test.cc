// The ONNX node tests of nn operators that the importer refuses (opset 1 / 6 models,
// BatchNormalization training-mode outputs) run here on hand-built one-node graphs with
// the same attributes, against ONNX's expected outputs (rtol 1e-3, atol 1e-7).
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/tensor_proto.h"
#include "tests/runtime/kernels/nn/nn_test_util.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::nn_test {
namespace {

std::string CaseDir(const std::string& name) {
  const char* env = std::getenv("QFUSE_ONNX_TESTDATA");
  return std::string(env != nullptr ? env : "/usr/share/libonnx-testdata/data") + "/node/" + name;
}

struct DataCase {
  std::string name;
  std::string op;
  std::vector<std::string> inputs;  // graph input names, in input_K.pb order
  int num_outputs;
  ir::AttributeMap attrs;
};

void RunDataCase(const DataCase& c) {
  const std::string dir = CaseDir(c.name) + "/test_data_set_0";
  ASSERT_TRUE(std::filesystem::exists(dir)) << dir << " missing: run tools/setup.sh (libonnx-testdata)";
  std::vector<NodeInput> inputs;
  std::vector<NamedTensor> bound;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::NamedTensor t, ir::ReadTensorFile(dir + "/input_" + std::to_string(k) + ".pb"));
    inputs.push_back({c.inputs[k], t.tensor});
    bound.push_back({c.inputs[k], t.tensor});
  }
  std::vector<NamedTensor> expected;
  for (int k = 0; k < c.num_outputs; ++k) {
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::NamedTensor t, ir::ReadTensorFile(dir + "/output_" + std::to_string(k) + ".pb"));
    expected.push_back({"y" + std::to_string(k), t.tensor});
  }
  ir::Graph graph;
  QFUSE_ASSERT_OK(BuildOneNode(&graph, c.op, inputs, c.attrs, c.num_outputs));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(graph));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> actual, exec->Run(bound));
  QFUSE_EXPECT_OK(testing::CompareOutputs(expected, actual, 1e-3, 1e-7));
}

class OnnxDataTest : public ::testing::TestWithParam<DataCase> {};

TEST_P(OnnxDataTest, MatchesExpectedOutputs) { RunDataCase(GetParam()); }

const std::vector<std::string> kBatchNormInputs = {"x", "s", "bias", "mean", "var"};

INSTANTIATE_TEST_SUITE_P(
    ImportRefused, OnnxDataTest,
    ::testing::Values(
        DataCase{"test_globalaveragepool", "GlobalAveragePool", {"x"}, 1, {}},
        DataCase{"test_globalaveragepool_precomputed", "GlobalAveragePool", {"x"}, 1, {}},
        DataCase{"test_globalmaxpool", "GlobalMaxPool", {"x"}, 1, {}},
        DataCase{"test_globalmaxpool_precomputed", "GlobalMaxPool", {"x"}, 1, {}},
        DataCase{"test_instancenorm_example", "InstanceNormalization", {"x", "s", "bias"}, 1, {}},
        DataCase{"test_instancenorm_epsilon", "InstanceNormalization", {"x", "s", "bias"}, 1,
                 Attrs({{"epsilon", 0.01f}})},
        DataCase{"test_batchnorm_example_training_mode", "BatchNormalization", kBatchNormInputs, 3,
                 Attrs({{"training_mode", int64_t{1}}})},
        DataCase{"test_batchnorm_epsilon_training_mode", "BatchNormalization", kBatchNormInputs, 3,
                 Attrs({{"training_mode", int64_t{1}}, {"epsilon", 0.01f}})}),
    [](const ::testing::TestParamInfo<DataCase>& info) { return info.param.name; });

}  // namespace
}  // namespace qfuse::runtime::nn_test
