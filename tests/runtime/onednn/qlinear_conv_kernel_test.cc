// The oneDNN integer conv units against the hand-written integer kernels on the sample
// models' int8 graphs (int8 and uint8 activations, fusion levels bn and full, both
// requantization modes): every INT8/UINT8 tensor and every output must be the same
// bytes. Runs only where oneDNN's int8 convolution is exact (AVX-512 VNNI).
#include <map>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

namespace numerics = ::qfuse::quant::numerics;

absl::StatusOr<std::map<std::string, ir::Tensor>> RunAll(const ir::Graph& graph, bool use_onednn,
                                                         numerics::RequantizeMode mode,
                                                         const std::vector<NamedTensor>& inputs) {
  SetUseOneDnn(use_onednn);
  ExecutorOptions options;
  options.requantize_mode = mode;
  absl::StatusOr<std::unique_ptr<Executor>> exec = Executor::Create(graph, options);
  SetUseOneDnn(true);
  QFUSE_RETURN_IF_ERROR(exec.status());
  std::map<std::string, ir::Tensor> seen;
  RunOptions run;
  run.observer = [&](const ir::Value& v, const ir::Tensor& t) {
    if (t.dtype() == ir::DataType::kInt8 || t.dtype() == ir::DataType::kUint8) seen.emplace(v.name(), t);
  };
  QFUSE_ASSIGN_OR_RETURN(std::vector<NamedTensor> outputs, (*exec)->Run(inputs, run));
  for (NamedTensor& o : outputs) seen.emplace("output:" + o.name, std::move(o.tensor));
  return seen;
}

using Param = std::tuple<std::string, fusion::FusionLevel, quant::ActivationType>;
class OneDnnIntegerUnitTest : public ::testing::TestWithParam<Param> {};

TEST_P(OneDnnIntegerUnitTest, SameBytesAsHandWrittenKernels) {
  if (!UseOneDnn() || !IsaAllowed(Isa::kAvx512Vnni)) GTEST_SKIP() << "no AVX-512 VNNI: oneDNN int8 is not used";
  const auto& [name, level, activations] = GetParam();
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/" + name));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, testing::QuantizeSample(name, level, activations));
  for (numerics::RequantizeMode mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunAll(*model.graph, false, mode, tc.inputs));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunAll(*model.graph, true, mode, tc.inputs));
    ASSERT_EQ(got.size(), want.size());
    ASSERT_GT(want.size(), 10u);
    for (const auto& [value, w] : want) {
      EXPECT_TRUE(got.at(value).BitwiseEqual(w)) << name << " " << value << " differs from the hand-written kernels";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Samples, OneDnnIntegerUnitTest,
    ::testing::Combine(::testing::Values("resnet_small", "mobilenetv2_small"),
                       ::testing::Values(fusion::FusionLevel::kBn, fusion::FusionLevel::kFull),
                       ::testing::Values(quant::ActivationType::kInt8, quant::ActivationType::kUint8)));

}  // namespace
}  // namespace qfuse::runtime::onednn
