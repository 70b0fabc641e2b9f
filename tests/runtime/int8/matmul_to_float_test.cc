// A MatMul unit with a bias and a residual (DequantizeLinear -> MatMul -> Add bias -> Add
// residual -> Relu -> QuantizeLinear, as exporters write a Linear layer on a 3-D input) runs,
// in mode onnx, as onnxruntime runs that group: its MatMulIntegerToFloat, then the float Adds,
// Relu and QuantizeLinear (int8_ops.h kMatMulToFloatAttr). Every output byte is checked against
// those float32 steps computed here from the exact integer accumulator; mode fixed keeps the
// integer output stage.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/qdq_lowering.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::Value;
using testing::QdqGraph;

constexpr int64_t kRows = 16, kK = 6, kN = 8;
constexpr float kSx = 0.043f, kSr = 0.061f, kSy = 0.08f;
constexpr int8_t kZx = -7, kZr = 5, kZy = -3;

struct Data {
  std::vector<int8_t> x, w, r;
  std::vector<float> w_scales, bias_scales;
  std::vector<int32_t> bias;
};

// Relu, then QuantizeLinear to INT8.
int Quantize(float v) {
  const float q = std::nearbyint(std::max(v, 0.f) / kSy) + kZy;
  return static_cast<int>(std::min(127.f, std::max(-128.f, q)));
}

int32_t Accumulator(const Data& d, const int8_t* x, int64_t c) {
  int32_t acc = 0;
  for (int64_t k = 0; k < kK; ++k) acc += (x[k] - kZx) * d.w[k * kN + c];
  return acc;
}

// onnxruntime's steps: MatMulIntegerToFloat, Add(DQ(bias)), Add(DQ(r)), Relu, QuantizeLinear.
int FloatSteps(const Data& d, const int8_t* x, int8_t r, int64_t c) {
  float v = static_cast<float>(Accumulator(d, x, c)) * (kSx * d.w_scales[c]);
  v = v + static_cast<float>(d.bias[c]) * d.bias_scales[c];
  v = v + static_cast<float>(r - kZr) * kSr;
  return Quantize(v);
}

// The bias added to the integer accumulator instead (one product less).
int IntegerBias(const Data& d, const int8_t* x, int8_t r, int64_t c) {
  float v = static_cast<float>(Accumulator(d, x, c) + d.bias[c]) * (kSx * d.w_scales[c]);
  v = v + static_cast<float>(r - kZr) * kSr;
  return Quantize(v);
}

// Weights and bias from fixed formulas; of the 16 rows of x and r, the first 8 were found by a
// search over 12 million random rows (numpy, float32) as rows where the two forms above give
// different bytes in some channel, so that the test tells them apart; the last 8 follow a
// formula.
Data MakeData() {
  Data d;
  for (int64_t k = 0; k < kK; ++k) {
    for (int64_t c = 0; c < kN; ++c) d.w.push_back(static_cast<int8_t>((k * 37 + c * 91) % 255 - 127));
  }
  for (int64_t c = 0; c < kN; ++c) {
    d.w_scales.push_back(0.0011f + 0.00013f * static_cast<float>(c));
    d.bias_scales.push_back(kSx * d.w_scales.back());
    d.bias.push_back(static_cast<int32_t>((c * 997) % 6001 - 3000));
  }
  d.x = {70,  105, 84,  49,  -99, 46,  79,  8,   30,  -126, 4,   -36, 85,  -15, 96,  102,
         98,  92,  -110, -112, 71, 115, -113, 54, -53, 89,  25,  15,  108, 75,  114, -102,
         -73, -95, -23, 97,  68,  55,  -99, 89,  -21, 11,  103, 59,  83,  35,  11,  43};
  d.r = {67,  -90,  64,  -2,  120, 98,  75,  -126, -100, 6,   59,  52,   119, 5,   75,  75,
         56,  -114, -31, -32, 46,  -37, 15,  -106, -81,  -105, 67, 7,    -99, 87,  22,  -5,
         -65, 77,   -64, 48,  57,  122, 0,   -40,  -90,  114, 104, -81,  10,  -59, 90,  69,
         65,  -114, 24,  -33, 15,  105, -49, -68,  71,   27,  -23, -75,  33,  1,   19,  98};
  for (int64_t row = 8; row < kRows; ++row) {
    for (int64_t k = 0; k < kK; ++k) d.x.push_back(static_cast<int8_t>((row * 53 + k * 29) % 256 - 128));
    for (int64_t c = 0; c < kN; ++c) d.r.push_back(static_cast<int8_t>((row * 17 + c * 71) % 256 - 128));
  }
  return d;
}

void Build(QdqGraph& b, const Data& d, bool float_output = false) {
  Value* x = b.Input("x", {kRows, kK}, kSx, kZx);
  Value* mm = b.Op("MatMul", {x, b.Weights("w", {kK, kN}, d.w, d.w_scales, 1)}, {kRows, kN});
  Value* biased = b.Op("Add", {mm, b.Bias("bias", d.bias, d.bias_scales)}, {kRows, kN});
  Value* sum = b.Op("Add", {biased, b.Input("r", {kRows, kN}, kSr, kZr)}, {kRows, kN});
  Value* relu = b.Op("Relu", {sum}, {kRows, kN});
  if (float_output) {
    b.FloatOutput(relu);
  } else {
    b.Output(relu, kSy, kZy);
  }
}

ir::Tensor Int8Tensor(const std::vector<int64_t>& dims, const std::vector<int8_t>& v) {
  return ir::Tensor::FromVector<int8_t>(dims, v);
}

TEST(MatMulToFloatTest, TheUnitTakesOnnxruntimesFloatSteps) {
  const Data d = MakeData();
  ASSERT_EQ(static_cast<int64_t>(d.x.size()), kRows * kK);
  QdqGraph b;
  Build(b, d);
  ExecutorOptions options;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, Executor::Create(b.graph(), options));
  int units = 0;
  for (const ir::Node* n : exec->graph().nodes()) {
    if (n->op_type() != kQLinearUnitOp) continue;
    ++units;
    EXPECT_EQ(*n->attrs().GetInt(kMatMulToFloatAttr, 0), 1);
    EXPECT_EQ(n->attrs().GetFloats(kBiasScalesAttr, {})->size(), static_cast<size_t>(kN));
  }
  ASSERT_EQ(units, 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> out,
                             exec->Run({{"x", Int8Tensor({kRows, kK}, d.x)}, {"r", Int8Tensor({kRows, kN}, d.r)}}));
  const auto y = out[0].tensor.values<int8_t>();
  ASSERT_EQ(static_cast<int64_t>(y.size()), kRows * kN);
  int integer_bias_differs = 0;
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t c = 0; c < kN; ++c) {
      const int want = FloatSteps(d, d.x.data() + i * kK, d.r[i * kN + c], c);
      ASSERT_EQ(static_cast<int>(y[i * kN + c]), want) << "row " << i << " channel " << c;
      integer_bias_differs += IntegerBias(d, d.x.data() + i * kK, d.r[i * kN + c], c) != want;
    }
  }
  EXPECT_GE(integer_bias_differs, 8);
}

// A unit that ends the graph: the same float steps, Relu, and no QuantizeLinear.
TEST(MatMulToFloatTest, AFloatOutputHasTheFloatSteps) {
  const Data d = MakeData();
  QdqGraph b;
  Build(b, d, /*float_output=*/true);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, Executor::Create(b.graph(), ExecutorOptions{}));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> out,
                             exec->Run({{"x", Int8Tensor({kRows, kK}, d.x)}, {"r", Int8Tensor({kRows, kN}, d.r)}}));
  const auto y = out[0].tensor.values<float>();
  ASSERT_EQ(static_cast<int64_t>(y.size()), kRows * kN);
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t c = 0; c < kN; ++c) {
      float v = static_cast<float>(Accumulator(d, d.x.data() + i * kK, c)) * (kSx * d.w_scales[c]);
      v = v + static_cast<float>(d.bias[c]) * d.bias_scales[c];
      v = v + static_cast<float>(d.r[i * kN + c] - kZr) * kSr;
      ASSERT_EQ(y[i * kN + c], std::max(v, 0.f)) << "row " << i << " channel " << c;
    }
  }
}

TEST(MatMulToFloatTest, ModeFixedKeepsTheIntegerStage) {
  const Data d = MakeData();
  QdqGraph b;
  Build(b, d);
  LoweringOptions options;
  options.mode = numerics::RequantizeMode::kFixed;
  QFUSE_ASSERT_OK(LowerQdqToInteger(&b.graph(), options).status());
  for (const ir::Node* n : b.graph().nodes()) EXPECT_FALSE(n->attrs().Has(kMatMulToFloatAttr)) << n->Describe();
}

}  // namespace
}  // namespace qfuse::runtime::int8
