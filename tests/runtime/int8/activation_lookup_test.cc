// Pattern (k) of the QDQ lowering (runtime/int8/activation_lookup.h): DequantizeLinear -> a
// non-linear activation -> QuantizeLinear becomes one QLinearActivation whose bytes equal the
// float ops' on every one of the 256 input bytes, for every activation form, INT8 and UINT8,
// scales that put the inputs in the activations' bends, and both requantization modes. A
// HardSigmoid + Mul gate whose alpha is near but not exactly 1/6 keeps its float ops.
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/qdq_run.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

using ir::DataType;

using testing::RunQdqGraph;

struct Form {
  std::string name;
  float alpha = 0.f;  // HardSigmoid / LeakyRelu
};

// The activation of v as exporters write it.
ir::Value* Activate(testing::QdqGraph& b, const Form& f, ir::Value* v, const std::vector<int64_t>& dims) {
  ir::AttributeMap attrs;
  if (f.name == "SiLU") return b.Op("Mul", {v, b.Op("Sigmoid", {v}, dims)}, dims);
  if (f.name == "HardSigmoidGate") {  // torch's HardSwish before opset 14
    attrs.Set("alpha", f.alpha);
    attrs.Set("beta", 0.5f);
    return b.Op("Mul", {b.Op("HardSigmoid", {v}, dims, attrs), v}, dims);
  }
  if (f.name == "HardSigmoid" || f.name == "LeakyRelu") attrs.Set("alpha", f.alpha);
  if (f.name == "HardSigmoid") attrs.Set("beta", 0.4f);
  return b.Op(f.name, {v}, dims, attrs);
}

TEST(ActivationLookupTest, EveryInputByteAsTheFloatOps) {
  const std::vector<int64_t> dims = {2, 128};  // every byte value once
  int lowered = 0;
  for (const Form& form : {Form{"HardSwish"}, Form{"SiLU"}, Form{"Sigmoid"}, Form{"HardSigmoid", 0.3f},
                           Form{"LeakyRelu", 0.1f}, Form{"HardSigmoidGate", 1.f / 6.f}}) {
    for (const DataType type : {DataType::kUint8, DataType::kInt8}) {
      for (const float s_x : {0.011f, 0.043f, 0.09f}) {
        const int zp_x = type == DataType::kUint8 ? 131 : -7;
        testing::QdqGraph b;
        ir::Value* x = b.Input("x", dims, type, s_x, zp_x);
        b.Output(Activate(b, form, x, dims), type, s_x * 0.7f, type == DataType::kUint8 ? 40 : 3);
        ir::Tensor xt(type, dims);
        for (int i = 0; i < 256; ++i) xt.mutable_values<uint8_t>()[i] = static_cast<uint8_t>(i);
        for (const auto mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
          QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunQdqGraph(b.graph(), xt, false, mode));
          QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunQdqGraph(b.graph(), xt, true, mode));
          EXPECT_EQ(got.ops["QLinearActivation"], 1) << form.name;
          EXPECT_EQ(got.ops.count("QuantizeLinear") + got.ops.count("DequantizeLinear"), 0u) << form.name;
          EXPECT_EQ(got.bytes, want.bytes) << form.name << " " << ir::DataTypeName(type) << " s_x " << s_x;
          ++lowered;
        }
      }
    }
  }
  EXPECT_EQ(lowered, 72);
}

// alpha 1/6 + 1e-7 is HardSwish to the activation matcher (within 1e-6) but not to this
// pattern's table, which computes HardSwish's own product with fl(1/6): pattern (k) leaves it,
// and pattern (m) (elementwise_lookup.h) takes the HardSigmoid and the Mul with the gate's own
// alpha: the same bytes as the float ops.
TEST(ActivationLookupTest, AGateNearOneSixthIsNotTakenAsHardSwish) {
  const std::vector<int64_t> dims = {256};
  testing::QdqGraph b;
  ir::Value* x = b.Input("x", dims, DataType::kUint8, 0.05f, 128);
  b.Output(Activate(b, Form{"HardSigmoidGate", 1.f / 6.f + 1e-7f}, x, dims), DataType::kUint8, 0.03f, 20);
  ir::Tensor xt(DataType::kUint8, dims);
  for (int i = 0; i < 256; ++i) xt.mutable_values<uint8_t>()[i] = static_cast<uint8_t>(i);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunQdqGraph(b.graph(), xt, true, numerics::RequantizeMode::kOnnx));
  EXPECT_EQ(got.ops.count("QLinearActivation"), 0u);
  EXPECT_EQ(got.ops["QLinearLookup"], 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunQdqGraph(b.graph(), xt, false, numerics::RequantizeMode::kOnnx));
  EXPECT_EQ(got.bytes, want.bytes);
}

}  // namespace
}  // namespace qfuse::runtime
