// Pattern (m) of the QDQ lowering (runtime/int8/elementwise_lookup.h): DequantizeLinear -> a
// chain of elementwise float ops of x alone -> QuantizeLinear becomes one QLinearLookup whose
// bytes equal the float ops' on every one of the 256 input bytes (the simulated run, integer
// kernels off), for PP-LCNet's affine -> HardSwish-as-HardSigmoid*x -> affine, for the other
// ops of the set, INT8 and UINT8, both requantization modes; and chains that must stay float.
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

ir::Value* OneFloat(testing::QdqGraph& b, const std::string& name, float v) {
  return *b.graph().AddConstant(name, ir::Tensor::FromVector<float>({1}, {v}));
}

ir::AttributeMap Attrs(std::initializer_list<std::pair<const std::string, ir::AttributeValue>> list) {
  ir::AttributeMap attrs;
  for (const auto& [k, v] : list) attrs.Set(k, v);
  return attrs;
}

// x -> Mul(s1) -> Add(t1) -> HardSigmoid(1/6, 1/2) * . -> Mul(s2) -> Add(t2), the constants
// first where PaddleOCR's detector has them.
ir::Value* PpLcNetChain(testing::QdqGraph& b, ir::Value* x, const std::vector<int64_t>& dims) {
  ir::Value* a =
      b.Op("Add", {b.Op("Mul", {OneFloat(b, "s1", 1.900608f), x}, dims), OneFloat(b, "t1", 0.80117214f)}, dims);
  ir::Value* gate = b.Op("HardSigmoid", {a}, dims, Attrs({{"alpha", 1.f / 6.f}, {"beta", 0.5f}}));
  ir::Value* hs = b.Op("Mul", {a, gate}, dims);
  return b.Op("Add", {b.Op("Mul", {OneFloat(b, "s2", 0.63296586f), hs}, dims), OneFloat(b, "t2", -0.54658866f)}, dims);
}

// Sub and Div by scalars, a square (one value read twice), Relu, Clip, LeakyRelu.
ir::Value* OtherOpsChain(testing::QdqGraph& b, ir::Value* x, const std::vector<int64_t>& dims) {
  ir::Value* d = b.Op("Div", {b.Op("Sub", {x, b.FloatConst("c", 0.3f)}, dims), b.FloatConst("six", 6.f)}, dims);
  ir::Value* sq = b.Op("Mul", {d, d}, dims);
  ir::Value* r = b.Op("Sub", {b.Op("Relu", {sq}, dims), b.Op("LeakyRelu", {d}, dims, Attrs({{"alpha", 0.1f}}))}, dims);
  return b.Op("Clip", {r, b.FloatConst("lo", -0.05f), b.FloatConst("hi", 0.2f)}, dims);
}

ir::Tensor EveryByte(DataType type, const std::vector<int64_t>& dims) {
  ir::Tensor xt(type, dims);
  for (int i = 0; i < 256; ++i) xt.mutable_values<uint8_t>()[i] = static_cast<uint8_t>(i);
  return xt;
}

TEST(ElementwiseLookupTest, EveryInputByteAsTheFloatOps) {
  const std::vector<int64_t> dims = {1, 2, 8, 16};  // every byte value once
  int lowered = 0;
  for (int chain = 0; chain < 2; ++chain) {
    for (const DataType type : {DataType::kUint8, DataType::kInt8}) {
      for (const float s_x : {0.011f, 0.043f, 0.09f}) {
        SCOPED_TRACE(::testing::Message() << "chain " << chain << " " << ir::DataTypeName(type) << " s_x " << s_x);
        const int zp_x = type == DataType::kUint8 ? 131 : -7;
        testing::QdqGraph b;
        ir::Value* x = b.Input("x", dims, type, s_x, zp_x);
        ir::Value* y = chain == 0 ? PpLcNetChain(b, x, dims) : OtherOpsChain(b, x, dims);
        b.Output(y, type, chain == 0 ? 0.013f : 0.0011f, type == DataType::kUint8 ? 40 : 3);
        const ir::Tensor xt = EveryByte(type, dims);
        for (const auto mode : {numerics::RequantizeMode::kOnnx, numerics::RequantizeMode::kFixed}) {
          QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunQdqGraph(b.graph(), xt, false, mode));
          QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunQdqGraph(b.graph(), xt, true, mode));
          EXPECT_EQ(got.ops["QLinearLookup"], 1);
          EXPECT_EQ(got.ops.size(), 1u);  // nothing else: no Q, DQ or float op left
          EXPECT_EQ(got.bytes, want.bytes);
          // The table is not a copy of the input: the chain moved most bytes.
          int moved = 0;
          for (int i = 0; i < 256; ++i) moved += got.bytes[i] != xt.data<uint8_t>()[i];
          EXPECT_GT(moved, 128);
          ++lowered;
        }
      }
    }
  }
  EXPECT_EQ(lowered, 24);
}

// What must stay float: a divisor from the chain, a constant of two values (not one scalar),
// an intermediate that is also a graph output, and a second quantized input.
TEST(ElementwiseLookupTest, ChainsThatStayFloat) {
  const std::vector<int64_t> dims = {1, 256};
  const ir::Tensor xt = EveryByte(DataType::kUint8, dims);
  for (int which = 0; which < 4; ++which) {
    SCOPED_TRACE(which);
    testing::QdqGraph b;
    ir::Value* x = b.Input("x", dims, DataType::kUint8, 0.05f, 128);
    ir::Value* y = nullptr;
    if (which == 0) y = b.Op("Div", {b.FloatConst("one", 1.f), b.Op("Add", {x, b.FloatConst("c", 7.f)}, dims)}, dims);
    if (which == 1) {
      ir::Value* two = *b.graph().AddConstant("two", ir::Tensor::FromVector<float>({2, 1}, {1.f, 2.f}));
      y = b.Op("Add", {b.Op("Mul", {x, two}, {2, 256}), b.FloatConst("c", 1.f)}, {2, 256});
    }
    if (which == 2) {
      ir::Value* mid = b.Op("Mul", {x, b.FloatConst("c", 3.f)}, dims);
      b.FloatOutput(mid);
      y = b.Op("Add", {mid, b.FloatConst("t", 1.f)}, dims);
    }
    if (which == 3) {
      ir::Value* z = b.Input("z", dims, DataType::kUint8, 0.05f, 128);
      y = b.Op("Mul", {b.Op("Add", {x, z}, dims), b.FloatConst("c", 3.f)}, dims);
    }
    b.Output(y, DataType::kUint8, 0.02f, 10);
    if (which == 3) continue;  // two inputs: the lowering alone is checked below
    QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunQdqGraph(b.graph(), xt, true, numerics::RequantizeMode::kOnnx));
    EXPECT_EQ(got.ops.count("QLinearLookup"), 0u);
    QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunQdqGraph(b.graph(), xt, false, numerics::RequantizeMode::kOnnx));
    EXPECT_EQ(got.bytes, want.bytes);
  }
  {
    testing::QdqGraph b;
    ir::Value* x = b.Input("x", dims, DataType::kUint8, 0.05f, 128);
    ir::Value* z = b.Input("z", dims, DataType::kUint8, 0.05f, 128);
    b.Output(b.Op("Mul", {b.Op("Add", {x, z}, dims), b.FloatConst("c", 3.f)}, dims), DataType::kUint8, 0.02f, 10);
    ExecutorOptions options;
    QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, Executor::Create(b.graph(), options));
    for (const ir::Node* n : exec->graph().nodes()) EXPECT_NE(n->op_type(), "QLinearLookup");
  }
}

// An op nothing reads (here Mul(DQ(x), 2), added after the Add) is not part of what the
// QuantizeLinear sees: the table must be the Add's, not the last op found (a helper's review
// found a table of Q(2x) here).
TEST(ElementwiseLookupTest, AnUnreadOpBesideTheChainIsNotTheTable) {
  const std::vector<int64_t> dims = {1, 256};
  testing::QdqGraph b;
  ir::Value* x = b.Input("x", dims, DataType::kUint8, 0.05f, 128);
  ir::Value* y = b.Op("Add", {x, b.FloatConst("one", 1.f)}, dims);
  b.Op("Mul", {x, b.FloatConst("two", 2.f)}, dims);  // read by nothing
  b.Output(y, DataType::kUint8, 0.05f, 100);
  const ir::Tensor xt = EveryByte(DataType::kUint8, dims);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunQdqGraph(b.graph(), xt, false, numerics::RequantizeMode::kOnnx));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunQdqGraph(b.graph(), xt, true, numerics::RequantizeMode::kOnnx));
  EXPECT_EQ(got.bytes, want.bytes);
}

}  // namespace
}  // namespace qfuse::runtime
