// The ISA cap (runtime/cpu_isa.h): names parse, the cap reaches every dispatch point, and
// the int8 sample models give the same bytes on every path the machine has, with the
// scalar path as the oracle (both requantization modes, every int8 tensor compared).
#include "runtime/cpu_isa.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/int8/output_stage.h"
#include "runtime/kernels/linalg/avx2_sgemm.h"
#include "runtime/kernels/linalg/avx512_sgemm.h"
#include "runtime/kernels/quant/int8_gemm.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

TEST(CpuIsaTest, NamesRoundTripAndTyposAreErrors) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAmx}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(Isa parsed, ParseIsa(IsaName(isa)));
    EXPECT_EQ(parsed, isa);
  }
  QFUSE_ASSERT_OK_AND_ASSIGN(Isa upper, ParseIsa("AVX2"));
  EXPECT_EQ(upper, Isa::kAvx2);
  absl::StatusOr<Isa> typo = ParseIsa("avx-2");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("avx-2"), std::string::npos);
}

TEST(CpuIsaTest, CapReachesEveryDispatchPoint) {
  testing::IsaCapGuard guard;
  std::printf("detected ISA: %s\n", IsaName(DetectedIsa()));
  SetIsaCap(Isa::kScalar);
  EXPECT_EQ(MaxIsa(), Isa::kScalar);
  EXPECT_FALSE(kernels::linalg::Avx512SgemmAvailable());
  EXPECT_FALSE(kernels::linalg::Avx2SgemmAvailable());
  EXPECT_EQ(kernels::quant::BestInt8GemmIsa(), kernels::quant::Int8GemmIsa::kScalar);
  EXPECT_EQ(int8::CurrentRequantizeIsa(), int8::RequantizeIsa::kScalar);
  if (DetectedIsa() >= Isa::kAvx2) {
    SetIsaCap(Isa::kAvx2);
    EXPECT_EQ(MaxIsa(), Isa::kAvx2);
    EXPECT_FALSE(kernels::linalg::Avx512SgemmAvailable());
    EXPECT_TRUE(kernels::linalg::Avx2SgemmAvailable());
    EXPECT_EQ(kernels::quant::BestInt8GemmIsa(), kernels::quant::Int8GemmIsa::kAvx2);
    EXPECT_EQ(int8::CurrentRequantizeIsa(), int8::RequantizeIsa::kAvx2);
    // At avx2_vnni the int8 GEMM takes AVX-VNNI where the CPU has it; the other kernels keep
    // their AVX2 code.
    EXPECT_FALSE(VnniAllowed());
    SetIsaCap(Isa::kAvx2Vnni);
    EXPECT_EQ(MaxIsa(), DetectedIsa() >= Isa::kAvx2Vnni ? Isa::kAvx2Vnni : Isa::kAvx2);
    EXPECT_EQ(VnniAllowed(), DetectedIsa() >= Isa::kAvx2Vnni);
    EXPECT_FALSE(kernels::linalg::Avx512SgemmAvailable());
    EXPECT_TRUE(kernels::linalg::Avx2SgemmAvailable());
    EXPECT_EQ(kernels::quant::BestInt8GemmIsa(),
              CpuHasAvxVnni() ? kernels::quant::Int8GemmIsa::kAvxVnni : kernels::quant::Int8GemmIsa::kAvx2);
    EXPECT_EQ(int8::CurrentRequantizeIsa(), int8::RequantizeIsa::kAvx2);
  }
  if (DetectedIsa() >= Isa::kAvx512Vnni) {
    SetIsaCap(Isa::kAvx512);  // AVX-512 without any VNNI (Skylake-SP), whatever this CPU has
    EXPECT_TRUE(kernels::linalg::Avx512SgemmAvailable());
    EXPECT_FALSE(VnniAllowed());
    EXPECT_FALSE(kernels::quant::Int8GemmIsaAvailable(kernels::quant::Int8GemmIsa::kAvxVnni));
    EXPECT_EQ(kernels::quant::BestInt8GemmIsa(), kernels::quant::Int8GemmIsa::kAvx2);
    SetIsaCap(Isa::kAvx512Vnni);
    EXPECT_EQ(kernels::quant::BestInt8GemmIsa(), kernels::quant::Int8GemmIsa::kAvx512Vnni);
  }
}

// Every INT8/UINT8 tensor and every output of one run, by value name.
absl::StatusOr<std::map<std::string, ir::Tensor>> RunAll(const ir::Graph& graph, numerics::RequantizeMode mode,
                                                         const std::vector<NamedTensor>& inputs) {
  ExecutorOptions options;
  options.requantize_mode = mode;
  QFUSE_ASSIGN_OR_RETURN(auto exec, Executor::Create(graph, options));
  std::map<std::string, ir::Tensor> seen;
  RunOptions run;
  run.observer = [&](const ir::Value& v, const ir::Tensor& t) {
    if (t.dtype() == ir::DataType::kInt8 || t.dtype() == ir::DataType::kUint8) seen.emplace(v.name(), t);
  };
  QFUSE_ASSIGN_OR_RETURN(std::vector<NamedTensor> outputs, exec->Run(inputs, run));
  for (NamedTensor& o : outputs) seen.emplace("output:" + o.name, std::move(o.tensor));
  return seen;
}

// (sample, 7-bit weights): with reduce_range every weight is in [-64, 64], so the AVX2 path
// multiplies with vpmaddubsw (int8_gemm.h); with 8-bit weights it widens to int16.
class IntegerPathsTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(IntegerPathsTest, EveryIsaGivesTheScalarBytes) {
  testing::IsaCapGuard guard;
  const auto& [name, reduce_range] = GetParam();
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/" + name));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, testing::QuantizeSample(name, fusion::FusionLevel::kFull,
                                                                      quant::ActivationType::kInt8, reduce_range));
  int max_abs_weight = 0;
  for (const ir::Node* n : model.graph->nodes()) {
    const ir::Value* data = n->op_type() == "DequantizeLinear" ? n->input(0) : nullptr;
    if (data == nullptr || !data->is_constant() || data->initializer()->dtype() != ir::DataType::kInt8) continue;
    for (int8_t w : data->initializer()->values<int8_t>()) max_abs_weight = std::max(max_abs_weight, std::abs(int{w}));
  }
  EXPECT_EQ(max_abs_weight, reduce_range ? 64 : 127);
  for (numerics::RequantizeMode mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
    SetIsaCap(Isa::kScalar);
    QFUSE_ASSERT_OK_AND_ASSIGN(auto oracle, RunAll(*model.graph, mode, tc.inputs));
    ASSERT_GT(oracle.size(), 10u);
    for (Isa cap : {Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAvx512Vnni}) {
      if (cap > DetectedIsa()) continue;
      SetIsaCap(cap);
      QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunAll(*model.graph, mode, tc.inputs));
      ASSERT_EQ(got.size(), oracle.size());
      int differing = 0;
      for (const auto& [value, want] : oracle) {
        if (!got.at(value).BitwiseEqual(want)) {
          ++differing;
          ADD_FAILURE() << name << " at cap " << IsaName(cap) << ": " << value << " differs from the scalar path";
        }
      }
      std::printf("%s%s %s cap %s: %zu tensors, %d differ from scalar\n", name.c_str(), reduce_range ? " (7-bit)" : "",
                  mode == numerics::RequantizeMode::kOnnx ? "onnx" : "fixed", IsaName(cap), oracle.size(), differing);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, IntegerPathsTest,
                         ::testing::Combine(::testing::Values("resnet_small", "mobilenetv2_small"), ::testing::Bool()));

}  // namespace
}  // namespace qfuse::runtime
