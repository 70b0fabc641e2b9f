// Pattern (j) of the QDQ lowering: GELU as exporters write it before opset 20, in a float
// region, becomes one qfuse.Gelu. On x from a DequantizeLinear (where onnxruntime keeps the
// five ops) it gives the five ops' values bit for bit, in both Mul orders; on x from a float op
// (where onnxruntime fuses) it gives onnxruntime's product form (0.5 x) (erf(x * 0.70710678)
// + 1), computed here from ir::Erf. Every int8 input is checked, and against the exact GELU in
// double precision. Chains that differ keep their ops.
#include "runtime/int8/gelu_fusion.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/casts.h"
#include "gtest/gtest.h"
#include "ir/erf.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/qdq_lowering.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::Value;
using testing::QdqGraph;

constexpr float kXScale = 0.05f;
constexpr int8_t kXZero = -3;

// How a test's chain departs from the GELU form.
struct ChainShape {
  bool half_first = false;      // Mul(Mul(x, 0.5), Add) instead of Mul(Mul(x, Add), 0.5)
  bool constants_first = false;  // the constant as the first input of Add and the Muls
  float divisor = 1.4142135f;
  float addend = 1.f;
  float factor = 0.5f;
  bool erf_is_an_output = false;
  bool float_op_first = false;  // x = Add(DQ(x), 0.25) instead of DQ(x)
};

constexpr float kShift = 0.25f;

// DQ(x) [1, 256] -> the chain -> float graph output.
void BuildChain(QdqGraph& b, const ChainShape& shape) {
  const std::vector<int64_t> dims = {1, 256};
  auto binary = [&](const char* op, Value* v, Value* c) {
    return shape.constants_first && std::string(op) != "Div" ? b.Op(op, {c, v}, dims) : b.Op(op, {v, c}, dims);
  };
  Value* x = b.Input("x", dims, kXScale, kXZero);
  if (shape.float_op_first) x = b.Op("Add", {x, b.FloatConst("shift", kShift)}, dims);
  Value* erf = b.Op("Erf", {binary("Div", x, b.FloatConst("sqrt2", shape.divisor))}, dims);
  Value* plus_one = binary("Add", erf, b.FloatConst("one", shape.addend));
  Value* y = shape.half_first
                 ? b.Op("Mul", {binary("Mul", x, b.FloatConst("half", shape.factor)), plus_one}, dims)
                 : binary("Mul", b.Op("Mul", {x, plus_one}, dims), b.FloatConst("half", shape.factor));
  b.FloatOutput(y);
  if (shape.erf_is_an_output) b.FloatOutput(erf);
}

using testing::OpCounts;

ir::Tensor EveryInt8Value() {
  ir::Tensor t = *ir::Tensor::Create(ir::DataType::kInt8, {1, 256});
  auto v = t.mutable_values<int8_t>();
  for (int i = 0; i < 256; ++i) v[i] = static_cast<int8_t>(i - 128);
  return t;
}

TEST(GeluFusionTest, EitherFormBecomesOneGelu) {
  for (bool half_first : {false, true}) {
    for (bool constants_first : {false, true}) {
      ChainShape shape;
      shape.half_first = half_first;
      shape.constants_first = constants_first;
      QdqGraph b;
      BuildChain(b, shape);
      const std::string first_name = b.graph().FindValue("x_dequantized")->uses()[0].node->name();
      const std::string output_name = b.graph().outputs()[0]->name();
      QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
      EXPECT_EQ(stats.gelus, 1);
      EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{"DequantizeLinear", 1}, {"Gelu", 1}}));
      const ir::Node* gelu = b.graph().outputs()[0]->producer();
      ASSERT_EQ(gelu->op_type(), kGeluOp);
      EXPECT_EQ(gelu->domain(), "qfuse");
      EXPECT_EQ(gelu->name(), first_name);
      EXPECT_EQ(b.graph().outputs()[0]->name(), output_name);
      ASSERT_EQ(gelu->inputs().size(), 1u);
      EXPECT_EQ(gelu->input(0)->name(), "x_dequantized");
      EXPECT_EQ(*gelu->attrs().GetFloat(kGeluDivisorAttr, 0.f), 1.4142135f);
      EXPECT_EQ(*gelu->attrs().GetInt(kGeluHalfFirstAttr, -1), half_first ? 1 : 0);
    }
  }
}

// The executor lowers (and fuses) with integer kernels and runs the five float ops without.
std::map<bool, std::vector<float>> FusedAndUnfused(const ChainShape& shape) {
  QdqGraph b;
  BuildChain(b, shape);
  std::map<bool, std::vector<float>> outputs;
  for (bool integer_kernels : {true, false}) {
    ExecutorOptions options;
    options.integer_kernels = integer_kernels;
    auto exec = Executor::Create(b.graph(), options);
    EXPECT_TRUE(exec.ok()) << exec.status();
    EXPECT_EQ(OpCounts((*exec)->graph()).count("Gelu"), integer_kernels ? 1u : 0u);
    auto out = (*exec)->Run({{"x", EveryInt8Value()}});
    EXPECT_TRUE(out.ok()) << out.status();
    const auto v = (*out)[0].tensor.values<float>();
    outputs[integer_kernels].assign(v.begin(), v.end());
  }
  return outputs;
}

double ExactGelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(GeluFusionTest, AfterADequantizeLinearTheFiveOpsValues) {
  for (bool half_first : {false, true}) {
    ChainShape shape;
    shape.half_first = half_first;
    std::map<bool, std::vector<float>> outputs = FusedAndUnfused(shape);
    ASSERT_EQ(outputs[true].size(), 256u);
    for (int i = 0; i < 256; ++i) {
      const float x = kXScale * static_cast<float>(i - 128 - kXZero);
      EXPECT_EQ(absl::bit_cast<uint32_t>(outputs[true][i]), absl::bit_cast<uint32_t>(outputs[false][i])) << "x " << x;
      EXPECT_NEAR(outputs[true][i], ExactGelu(x), 3e-7 * (1 + std::abs(ExactGelu(x)))) << "x " << x;
    }
  }
}

TEST(GeluFusionTest, AfterAFloatOpOnnxruntimesProductForm) {
  ChainShape shape;
  shape.float_op_first = true;
  std::map<bool, std::vector<float>> outputs = FusedAndUnfused(shape);
  ASSERT_EQ(outputs[true].size(), 256u);
  int differ_from_the_five_ops = 0;
  for (int i = 0; i < 256; ++i) {
    const float x = kXScale * static_cast<float>(i - 128 - kXZero) + kShift;
    const float product_form = (0.5f * x) * (ir::Erf(x * 0.70710678f) + 1.f);
    EXPECT_EQ(absl::bit_cast<uint32_t>(outputs[true][i]), absl::bit_cast<uint32_t>(product_form)) << "x " << x;
    EXPECT_NEAR(outputs[true][i], ExactGelu(x), 3e-7 * (1 + std::abs(ExactGelu(x)))) << "fused, x " << x;
    EXPECT_NEAR(outputs[false][i], ExactGelu(x), 3e-7 * (1 + std::abs(ExactGelu(x)))) << "five ops, x " << x;
    differ_from_the_five_ops += outputs[true][i] != outputs[false][i];
  }
  // Dividing by sqrt 2 rounds differently from the product on some inputs.
  EXPECT_GT(differ_from_the_five_ops, 0);
}

TEST(GeluFusionTest, ChainsThatDifferKeepTheirOps) {
  ChainShape divisor;
  divisor.divisor = 1.5f;
  ChainShape addend;
  addend.addend = 2.f;
  ChainShape factor;
  factor.factor = 0.25f;
  ChainShape erf_read_elsewhere;
  erf_read_elsewhere.erf_is_an_output = true;
  for (const ChainShape& shape : {divisor, addend, factor, erf_read_elsewhere}) {
    QdqGraph b;
    BuildChain(b, shape);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.gelus, 0);
    EXPECT_EQ(OpCounts(b.graph()).at("Erf"), 1);
    EXPECT_EQ(OpCounts(b.graph()).count("Gelu"), 0u);
  }
}

}  // namespace
}  // namespace qfuse::runtime::int8
