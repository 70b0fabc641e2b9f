// The integer ops through the QDQ lowering on hand-built QDQ graphs, against
// hand-computed values at rounding ties, in both requantization modes:
//   onnx: round half to even (2.5 -> 2, -2.5 -> -2, 3.5 -> 4);
//   fixed: gemmlowp (RoundingDivideByPOT ties away from zero: 2.5 -> 3, -2.5 -> -3; a tie
//          inside SaturatingRoundingDoublingHighMul, i.e. multiplier 0.5 with shift 0,
//          goes toward +infinity: 2.5 -> 3, -2.5 -> -2).
// Also: a MatMul of two activations as onnxruntime's QLinearMatMul. Plus: what the lowering leaves, the accumulator-overflow refusal and float fallbacks.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

using ir::DataType;
using ir::Tensor;
using ir::Value;

using testing::QdqGraph;
using testing::Type;

ir::AttributeMap Attrs(std::initializer_list<std::pair<const std::string, ir::AttributeValue>> list) {
  ir::AttributeMap m;
  for (const auto& [k, v] : list) m.Set(k, v);
  return m;
}

struct Result {
  std::vector<int> values;
  std::map<std::string, int> ops;  // of the graph that ran
};

absl::StatusOr<Result> RunGraph(const ir::Graph& g, const std::vector<NamedTensor>& inputs, bool integer,
                           numerics::RequantizeMode mode) {
  ExecutorOptions options;
  options.integer_kernels = integer;
  options.requantize_mode = mode;
  QFUSE_ASSIGN_OR_RETURN(auto exec, Executor::Create(g, options));
  QFUSE_ASSIGN_OR_RETURN(auto out, exec->Run(inputs));
  Result r;
  const Tensor& t = out[0].tensor;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (t.dtype() == DataType::kInt8) {
      r.values.push_back(t.data<int8_t>()[i]);
    } else if (t.dtype() == DataType::kUint8) {
      r.values.push_back(t.data<uint8_t>()[i]);
    } else {
      r.values.push_back(static_cast<int>(t.data<float>()[i] * 1000));
    }
  }
  for (const ir::Node* n : exec->graph().nodes()) ++r.ops[n->op_type()];
  return r;
}

NamedTensor Int8(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int8_t>& v) {
  return {name, Tensor::FromVector<int8_t>(dims, v)};
}

constexpr auto kOnnx = numerics::RequantizeMode::kOnnx;
constexpr auto kFixed = numerics::RequantizeMode::kFixed;

// Conv 1x1, 1 -> 2 channels, per-channel weights: multipliers 0.25 (channel 0) and
// 0.125 (channel 1); acc/4 and acc/8 land on ties.
TEST(Int8OpsTest, ConvUnitRoundsTiesPerMode) {
  QdqGraph b;
  Value* x = b.Input("x", {1, 1, 1, 4}, 1.f, 0);
  Value* w = b.Weights("w", {2, 1, 1, 1}, {1, 2}, {0.25f, 0.0625f}, 0);
  Value* y = b.Op("Conv", {x, w}, {1, 2, 1, 4});
  b.Output(y, 1.f, 0);
  const std::vector<NamedTensor> in = {Int8("x", {1, 1, 1, 4}, {10, 14, -10, -14})};
  // Channel 0: acc = x, real = x / 4 = 2.5, 3.5, -2.5, -3.5.
  // Channel 1: acc = 2x, real = 2x / 16 = 1.25, 1.75, -1.25, -1.75.
  QFUSE_ASSERT_OK_AND_ASSIGN(Result onnx, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(onnx.values, (std::vector<int>{2, 4, -2, -4, 1, 2, -1, -2}));
  EXPECT_EQ(onnx.ops.at("QLinearUnit"), 1);
  EXPECT_EQ(onnx.ops.count("DequantizeLinear"), 0u);
  QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(b.graph(), in, true, kFixed));
  EXPECT_EQ(fixed.values, (std::vector<int>{3, 4, -3, -4, 1, 2, -1, -2}));
  QFUSE_ASSERT_OK_AND_ASSIGN(Result simulated, RunGraph(b.graph(), in, false, kOnnx));
  EXPECT_EQ(simulated.values, onnx.values);
}

// Bias, residual (added before the single rounding) and Relu as the lower clamp bound.
TEST(Int8OpsTest, UnitWithBiasResidualAndRelu) {
  QdqGraph b;
  Value* x = b.Input("x", {1, 1, 1, 4}, 0.5f, 0);
  Value* w = b.Weights("w", {1, 1, 1, 1}, {1}, {0.5f}, 0);
  Value* bias = b.Bias("b", {2}, {0.25f});  // 0.5 in real units
  Value* r = b.Input("r", {1, 1, 1, 4}, 0.5f, 0);
  Value* conv = b.Op("Conv", {x, w, bias}, {1, 1, 1, 4});
  Value* add = b.Op("Add", {conv, r}, {1, 1, 1, 4});
  Value* relu = b.Op("Relu", {add}, {1, 1, 1, 4});
  b.Output(relu, 1.f, 0);
  // real = (x + 2) / 4 + r / 2: (x, r) = (4, 2) -> 2.5; (8, 1) -> 3.0; (-14, -2) -> -4, relu -> 0;
  // (4, 4) -> 3.5.
  const std::vector<NamedTensor> in = {Int8("x", {1, 1, 1, 4}, {4, 8, -14, 4}), Int8("r", {1, 1, 1, 4}, {2, 1, -2, 4})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result onnx, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(onnx.values, (std::vector<int>{2, 3, 0, 4}));
  EXPECT_EQ(onnx.ops.at("QLinearUnit"), 1);
  EXPECT_EQ(onnx.ops.size(), 1u);
  QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(b.graph(), in, true, kFixed));
  EXPECT_EQ(fixed.values, (std::vector<int>{3, 3, 0, 4}));
}

// Gemm unit ending the graph in float, with Clip(0, 6) (ReLU6) applied in float.
TEST(Int8OpsTest, GemmUnitWithFloatOutputAndRelu6) {
  QdqGraph b;
  Value* x = b.Input("x", {2, 2}, 0.5f, 0);
  Value* w = b.Weights("w", {2, 2}, {1, 2, 3, -4}, {0.5f, 0.25f}, 1);  // [K, N], axis 1
  Value* bias = b.Bias("b", {1, -1}, {0.25f, 0.125f});
  Value* gemm = b.Op("Gemm", {x, w, bias}, {2, 2});
  Value* clip = b.Op("Clip", {gemm, b.FloatConst("lo", 0.f), b.FloatConst("hi", 6.f)}, {2, 2});
  b.FloatOutput(clip);
  // acc[m][n] = sum_k x[m][k] w[k][n] + b[n]; y = acc * 0.5 * s_w[n].
  // x = [[2, 4], [20, -6]]: acc = [[2+12+1, 4-16-1], [20-18+1, 40+24-1]] = [[15, -13], [3, 63]]
  // y = [[3.75, -1.625 -> 0], [0.75, 7.875 -> 6]].
  const std::vector<NamedTensor> in = {Int8("x", {2, 2}, {2, 4, 20, -6})};
  for (auto mode : {kOnnx, kFixed}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(Result r, RunGraph(b.graph(), in, true, mode));
    EXPECT_EQ(r.values, (std::vector<int>{3750, 0, 750, 6000}));  // milli-units
    EXPECT_EQ(r.ops.at("QLinearUnit"), 1);
  }
}

TEST(Int8OpsTest, AddRequantizesEachInput) {
  QdqGraph b;
  Value* a = b.Input("a", {4}, 0.5f, 0);
  Value* c = b.Input("c", {4}, 0.25f, 0);
  b.Output(b.Op("Add", {a, c}, {4}), 1.f, 0);
  // a / 2 + c / 4: 2.5, -2.5, 3.5, -3.5.
  const std::vector<NamedTensor> in = {Int8("a", {4}, {3, -3, 5, -5}), Int8("c", {4}, {4, -4, 4, -4})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result onnx, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(onnx.values, (std::vector<int>{2, -2, 4, -4}));
  EXPECT_EQ(onnx.ops.at("QLinearAdd"), 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(b.graph(), in, true, kFixed));
  EXPECT_EQ(fixed.values, (std::vector<int>{3, -3, 4, -4}));
}

TEST(Int8OpsTest, ClampRequantizesWithBounds) {
  QdqGraph b;
  Value* x = b.Input("x", {5}, 0.5f, 0);
  b.Output(b.Op("Clip", {x, b.FloatConst("lo", -1.f), b.FloatConst("hi", 2.f)}, {5}), 0.25f, 0);
  // x / 2 clipped to [-1, 2], in steps of 0.25: 5 -> 2.5 -> 2 -> 8; -5 -> -1 -> -4; 3 -> 1.5 -> 6.
  const std::vector<NamedTensor> in = {Int8("x", {5}, {5, -5, 3, 0, -1})};
  for (auto mode : {kOnnx, kFixed}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(Result r, RunGraph(b.graph(), in, true, mode));
    EXPECT_EQ(r.values, (std::vector<int>{8, -4, 6, 0, -2}));
    EXPECT_EQ(r.ops.at("QLinearClamp"), 1);
  }
  QdqGraph relu;
  Value* xr = relu.Input("x", {4}, 0.5f, 0);
  relu.Output(relu.Op("Relu", {xr}, {4}), 1.f, 0);
  // x / 2: 2.5, 3.5, -2.5 -> 0, 0.5.  Multiplier 0.5 has shift 0: fixed rounds the tie in
  // SaturatingRoundingDoublingHighMul, toward +infinity (0.5 -> 1).
  const std::vector<NamedTensor> in2 = {Int8("x", {4}, {5, 7, -5, 1})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result onnx, RunGraph(relu.graph(), in2, true, kOnnx));
  EXPECT_EQ(onnx.values, (std::vector<int>{2, 4, 0, 0}));
  QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(relu.graph(), in2, true, kFixed));
  EXPECT_EQ(fixed.values, (std::vector<int>{3, 4, 0, 1}));
}

// In mode onnx a clamp is onnxruntime's float path Q(clamp(DQ(x))), which it runs for a
// Relu/Clip (it has no integer one): sx = 0.1, sy = 0.2, x = -109: -109 * 0.1f = -10.900001,
// / 0.2f = -54.500004 -> -55, where one multiplier 0.1f / 0.2f = 0.5 would give the tie
// -54.5 -> -54. The simulated graph computes exactly the float path.
TEST(Int8OpsTest, ClampIsTheFloatPathInModeOnnx) {
  QdqGraph b;
  Value* x = b.Input("x", {2}, 0.1f, 0);
  b.Output(b.Op("Clip", {x, b.FloatConst("lo", -100.f), b.FloatConst("hi", 100.f)}, {2}), 0.2f, 0);
  const std::vector<NamedTensor> in = {Int8("x", {2}, {-109, 40})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result integer, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(integer.ops.at("QLinearClamp"), 1);
  EXPECT_EQ(integer.values, (std::vector<int>{-55, 20}));
  QFUSE_ASSERT_OK_AND_ASSIGN(Result simulated, RunGraph(b.graph(), in, false, kOnnx));
  EXPECT_EQ(simulated.values, integer.values);
}

TEST(Int8OpsTest, GlobalAveragePoolSumsInInt32) {
  QdqGraph b;
  Value* x = b.Input("x", {1, 3, 2, 2}, 1.f, 0);
  b.Output(b.Op("GlobalAveragePool", {x}, {1, 3, 1, 1}), 1.f, 0);
  // Sums 10, -10, 6 over 4 positions: 2.5, -2.5, 1.5.
  const std::vector<NamedTensor> in = {Int8("x", {1, 3, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -4, 0, 2, 2, 2})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result onnx, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(onnx.values, (std::vector<int>{2, -2, 2}));
  EXPECT_EQ(onnx.ops.at("QLinearGlobalAveragePool"), 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(b.graph(), in, true, kFixed));
  EXPECT_EQ(fixed.values, (std::vector<int>{3, -3, 2}));
}

TEST(Int8OpsTest, AveragePoolExcludesPaddingFromTheDivisor) {
  QdqGraph b;
  Value* x = b.Input("x", {1, 1, 2, 2}, 1.f, 0);
  b.Output(b.Op("AveragePool", {x}, {1, 1, 2, 2},
                Attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 0, 0}}})),
           1.f, 0);
  // Windows (top-left padded): {x00} = 5, {x00, x01} = 5+0 -> 2.5, {x00, x10} = 2.5, all four = 10/4 = 2.5.
  const std::vector<NamedTensor> in = {Int8("x", {1, 1, 2, 2}, {5, 0, 0, 5})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result onnx, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(onnx.values, (std::vector<int>{5, 2, 2, 2}));
  EXPECT_EQ(onnx.ops.at("QLinearAveragePool"), 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(b.graph(), in, true, kFixed));
  EXPECT_EQ(fixed.values, (std::vector<int>{5, 3, 3, 3}));
}

TEST(Int8OpsTest, ConcatRequantizesInputsWithOtherParams) {
  QdqGraph b;
  Value* a = b.Input("a", {1, 2}, 0.25f, 0);
  Value* c = b.Input("c", {1, 2}, 1.f, 0);
  b.Output(b.Op("Concat", {a, c}, {1, 4}, Attrs({{"axis", int64_t{1}}})), 1.f, 0);
  // a / 4: 10 -> 2.5, -10 -> -2.5 (multiplier 0.25: shift -1, tie in the final divide); c copied.
  const std::vector<NamedTensor> in = {Int8("a", {1, 2}, {10, -10}), Int8("c", {1, 2}, {7, -128})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result onnx, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(onnx.values, (std::vector<int>{2, -2, 7, -128}));
  EXPECT_EQ(onnx.ops.at("QLinearConcat"), 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(b.graph(), in, true, kFixed));
  EXPECT_EQ(fixed.values, (std::vector<int>{3, -3, 7, -128}));
}

TEST(Int8OpsTest, MaxPoolRunsOnInt8WhenParamsAgree) {
  QdqGraph b;
  Value* x = b.Input("x", {1, 1, 2, 2}, 0.5f, 0);
  Value* pool = b.Op("MaxPool", {x}, {1, 1, 1, 1}, Attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}}));
  b.Output(pool, 0.5f, 0);
  const std::vector<NamedTensor> in = {Int8("x", {1, 1, 2, 2}, {-7, 3, 9, -128})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result r, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(r.values, (std::vector<int>{9}));
  EXPECT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops.at("MaxPool"), 1);
}

TEST(Int8OpsTest, UnmatchedGroupsStayFloat) {
  // Sub has no int8 form: DQ -> Sub -> Q runs as written.
  QdqGraph b;
  Value* a = b.Input("a", {2, 2}, 0.5f, 0);
  Value* c = b.Input("c", {2}, 0.5f, 0);
  b.Output(b.Op("Sub", {a, c}, {2, 2}), 0.5f, 0);
  const std::vector<NamedTensor> in = {Int8("a", {2, 2}, {1, 2, 3, 4}), Int8("c", {2}, {10, 20})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result r, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(r.values, (std::vector<int>{-9, -18, -7, -16}));
  EXPECT_EQ(r.ops.at("Sub"), 1);
  EXPECT_EQ(r.ops.at("DequantizeLinear"), 2);
}

// QLinearAdd is onnxruntime's: c = fma(A, rA, fma(B, rB, F)) on the raw values, rounded half
// to even (numerics/requantize.h), not DequantizeLinear -> Add -> QuantizeLinear in float.
// sA = 0.1, sB = 0.2, sC = 0.4: rA = 0.25 and rB = 0.5 exactly (0.4f is 4 * 0.1f), so
// 96 * 0.25 + 115 * 0.5 = 81.5 is a tie and gives 82; in float, 96 * 0.1f + 115 * 0.2f is
// 32.599997 and / 0.4f = 81.499992, which gives 81.
TEST(Int8OpsTest, AddIsOnnxRuntimesQLinearAdd) {
  QdqGraph b;
  Value* a = b.Input("a", {2}, 0.1f, 0);
  Value* c = b.Input("c", {2}, 0.2f, 0);
  b.Output(b.Op("Add", {a, c}, {2}), 0.4f, 0);
  const std::vector<NamedTensor> in = {Int8("a", {2}, {96, 5}), Int8("c", {2}, {115, 0})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result integer, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(integer.values, (std::vector<int>{82, 1}));  // 5 * 0.25 = 1.25 -> 1
  EXPECT_EQ(integer.ops.at("QLinearAdd"), 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(Result simulated, RunGraph(b.graph(), in, false, kOnnx));
  EXPECT_EQ(simulated.values, (std::vector<int>{81, 1}));
}

// A broadcasting Add is lowered too. Where A is one value along a run of B, onnxruntime
// swaps the operands: c = fma(B, rB, fma(A, rA, F)). With sA = 0.013, sB = 0.06, sC = 0.09,
// A = -15, B = -47 (computed in exact rational arithmetic): the usual order gives
// fma(-15, rA, -47 rB rounded) = -33.5 exactly -> -34, the swapped one -33.499996 -> -33.
TEST(Int8OpsTest, BroadcastAddFollowsOnnxRuntimesOperandOrder) {
  for (const bool a_is_scalar : {true, false}) {
    QdqGraph b;
    const std::vector<int64_t> a_dims = a_is_scalar ? std::vector<int64_t>{1} : std::vector<int64_t>{2};
    const std::vector<int64_t> c_dims = a_is_scalar ? std::vector<int64_t>{2} : std::vector<int64_t>{1};
    Value* a = b.Input("a", a_dims, 0.013f, 0);
    Value* c = b.Input("c", c_dims, 0.06f, 0);
    b.Output(b.Op("Add", {a, c}, {2}), 0.09f, 0);
    const std::vector<NamedTensor> in =
        a_is_scalar ? std::vector<NamedTensor>{Int8("a", {1}, {-15}), Int8("c", {2}, {-47, -47})}
                    : std::vector<NamedTensor>{Int8("a", {2}, {-15, -15}), Int8("c", {1}, {-47})};
    QFUSE_ASSERT_OK_AND_ASSIGN(Result r, RunGraph(b.graph(), in, true, kOnnx));
    EXPECT_EQ(r.ops.at("QLinearAdd"), 1);
    const int expected = a_is_scalar ? -33 : -34;
    EXPECT_EQ(r.values, (std::vector<int>{expected, expected})) << "a is scalar: " << a_is_scalar;
  }
}

// A Mul of two quantized activations (a squeeze-excitation scale between two units) is
// onnxruntime's QLinearMul: with sA = sB = 0.01, sC = 0.05 and zero point 100, r =
// fl(fl(0.01 * 0.01) / 0.05) = 0.0019999999 and A = -126, B = 125 give p = -15750,
// fl(-15750 r) = -31.499998 and fl(-31.499998 + 100) = 68.5, a tie -> 68, where rounding
// before adding the zero point would give -31 + 100 = 69 (requantize_test has the same rule at
// zero point 128). Broadcast along a run of the other operand too, in either order.
TEST(Int8OpsTest, MulIsOnnxRuntimesQLinearMul) {
  for (const bool a_is_scalar : {false, true}) {
    QdqGraph b;
    const std::vector<int64_t> a_dims = a_is_scalar ? std::vector<int64_t>{1} : std::vector<int64_t>{2};
    Value* a = b.Input("a", a_dims, 0.01f, 0);
    Value* c = b.Input("c", {2}, 0.01f, 0);
    b.Output(b.Op("Mul", {a, c}, {2}), 0.05f, 100);
    const std::vector<NamedTensor> in = {
        a_is_scalar ? Int8("a", {1}, {-126}) : Int8("a", {2}, {-126, 10}), Int8("c", {2}, {125, 125})};
    QFUSE_ASSERT_OK_AND_ASSIGN(Result integer, RunGraph(b.graph(), in, true, kOnnx));
    EXPECT_EQ(integer.ops.at("QLinearMul"), 1);
    // 10 * 125 = 1250: fl(1250 r) = 2.4999998, fl(102.4999998) = 102.5, a tie -> 102.
    EXPECT_EQ(integer.values, (std::vector<int>{68, a_is_scalar ? 68 : 102})) << "a is scalar: " << a_is_scalar;
  }
}

// Broadcast runs of 64 values or more with one operand fixed (a squeeze-excitation scale
// over a 9 x 9 plane) look the output up in a 256-entry row of the op's table: the bytes must be
// those of the same op with the fixed operand expanded to the full shape (no broadcast), with B
// fixed along the runs and, for Mul (whose formula does not depend on the order), with A fixed.
TEST(Int8OpsTest, LongBroadcastRunsGiveTheBytesOfTheExpandedOp) {
  const std::vector<int64_t> full = {2, 3, 9, 9}, per_channel = {2, 3, 1, 1};
  std::vector<int8_t> plane(2 * 3 * 81), scale(6), expanded(plane.size());
  for (size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<int8_t>(i * 37 + 11);  // every byte value
  for (size_t c = 0; c < scale.size(); ++c) scale[c] = static_cast<int8_t>(static_cast<int>(c) * 53 - 120);
  for (size_t i = 0; i < plane.size(); ++i) expanded[i] = scale[i / 81];
  for (const std::string op : {"Mul", "Add"}) {
    for (const bool a_fixed : {false, true}) {
      if (op == "Add" && a_fixed) continue;  // onnxruntime swaps an Add's operands there
      auto run = [&](bool broadcast) -> absl::StatusOr<Result> {
        QdqGraph b;
        const std::vector<int64_t>& fixed_dims = broadcast ? per_channel : full;
        Value* x = b.Input("x", full, 0.03f, 5);
        Value* f = b.Input("f", fixed_dims, 0.02f, -3);
        b.Output(b.Op(op, a_fixed ? std::vector<Value*>{f, x} : std::vector<Value*>{x, f}, full), 0.05f, 2);
        return RunGraph(b.graph(), {Int8("x", full, plane), Int8("f", fixed_dims, broadcast ? scale : expanded)}, true,
                        kOnnx);
      };
      QFUSE_ASSERT_OK_AND_ASSIGN(Result got, run(true));
      QFUSE_ASSERT_OK_AND_ASSIGN(Result want, run(false));
      EXPECT_EQ(got.ops.at("QLinear" + op), 1);
      EXPECT_EQ(got.values, want.values) << op << (a_fixed ? ", A fixed" : ", B fixed");
    }
  }
}

// A MatMul of two quantized activations (an attention's Q K^T or P V) becomes ONNX
// QLinearMatMul, the op onnxruntime fuses the group into: exact int32 sums times
// r = fl(fl(sA * sB) / sY), rounded half to even before the zero point. With sA = sB = 0.01,
// sY = 0.05 and zero point 100, A = [-126, 3] and B = [125, 0]^T give -15750,
// fl(-15750 r) = -31.499998 -> -31 -> 69, where the float group (DQ -> MatMul -> Q) computes
// fl(-1.26 * 1.25) / 0.05 = -31.5 -> -32 -> 68. Mode fixed keeps the float group.
TEST(Int8OpsTest, MatMulOfTwoActivationsIsOnnxRuntimesQLinearMatMul) {
  QdqGraph b;
  Value* a = b.Input("a", {1, 2}, 0.01f, 0);
  Value* c = b.Input("c", {2, 1}, 0.01f, 0);
  b.Output(b.Op("MatMul", {a, c}, {1, 1}), 0.05f, 100);
  const std::vector<NamedTensor> in = {Int8("a", {1, 2}, {-126, 3}), Int8("c", {2, 1}, {125, 0})};
  QFUSE_ASSERT_OK_AND_ASSIGN(Result integer, RunGraph(b.graph(), in, true, kOnnx));
  EXPECT_EQ(integer.ops.at("QLinearMatMul"), 1);
  EXPECT_EQ(integer.ops.count("MatMul"), 0u);
  EXPECT_EQ(integer.values, std::vector<int>{69});
  QFUSE_ASSERT_OK_AND_ASSIGN(Result simulated, RunGraph(b.graph(), in, false, kOnnx));
  EXPECT_EQ(simulated.values, std::vector<int>{68});
  QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(b.graph(), in, true, kFixed));
  EXPECT_EQ(fixed.ops.at("MatMul"), 1);
  EXPECT_EQ(fixed.values, std::vector<int>{68});
}

// A Softmax between UINT8 DequantizeLinear and QuantizeLinear runs as onnxruntime's
// QLinearSoftmax, which multiplies by floor(1 / s_y): s_y = float(1/255) makes that 254, so x =
// [255, 0] at s_x = 1 (p = [1, e^-255]) gives [254, 0] where the float group gives [255, 0].
// x = [20, 10, 0] at s_x = 0.1 gives onnxruntime 1.30's [169, 62, 23] (the float group and
// onnxruntime without its fusions: [170, 62, 23]; models/zoo/softmax_probe.py --tiny). Mode fixed
// keeps the float group.
TEST(Int8OpsTest, SoftmaxIsOnnxRuntimesQLinearSoftmax) {
  struct Case {
    float x_scale;
    std::vector<uint8_t> x;
    std::vector<int> fused, float_group;
  };
  for (const Case& c : {Case{1.f, {255, 0}, {254, 0}, {255, 0}}, Case{0.1f, {20, 10, 0}, {169, 62, 23}, {170, 62, 23}}}) {
    const std::vector<int64_t> dims = {1, static_cast<int64_t>(c.x.size())};
    QdqGraph b;
    ir::AttributeMap axis;
    axis.Set("axis", int64_t{-1});
    b.Output(b.Op("Softmax", {b.Input("x", dims, DataType::kUint8, c.x_scale, 0)}, dims, axis), DataType::kUint8,
             1.f / 255, 0);
    const std::vector<NamedTensor> in = {{"x", Tensor::FromVector<uint8_t>(dims, c.x)}};
    QFUSE_ASSERT_OK_AND_ASSIGN(Result integer, RunGraph(b.graph(), in, true, kOnnx));
    EXPECT_EQ(integer.ops.at("QLinearSoftmax"), 1);
    EXPECT_EQ(integer.values, c.fused);
    QFUSE_ASSERT_OK_AND_ASSIGN(Result simulated, RunGraph(b.graph(), in, false, kOnnx));
    EXPECT_EQ(simulated.values, c.float_group);
    QFUSE_ASSERT_OK_AND_ASSIGN(Result fixed, RunGraph(b.graph(), in, true, kFixed));
    EXPECT_EQ(fixed.ops.at("Softmax"), 1);
    EXPECT_EQ(fixed.values, c.float_group);
  }
}

// onnxruntime computes a Softmax over a middle axis by transposing that axis last: the strided
// slices must give the bytes of the transposed tensor's rows.
TEST(Int8OpsTest, QLinearSoftmaxOverAMiddleAxisEqualsItsTransposedRows) {
  std::vector<uint8_t> x(2 * 5 * 3), xt(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 97 + 13) % 256);
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 5; ++k) {
      for (int j = 0; j < 3; ++j) xt[(n * 3 + j) * 5 + k] = x[(n * 5 + k) * 3 + j];
    }
  }
  std::vector<std::vector<int>> out;
  for (const auto& [dims, data, axis] : {std::make_tuple(std::vector<int64_t>{2, 5, 3}, x, int64_t{1}),
                                         std::make_tuple(std::vector<int64_t>{2, 3, 5}, xt, int64_t{-1})}) {
    QdqGraph b;
    ir::AttributeMap attrs;
    attrs.Set("axis", axis);
    b.Output(b.Op("Softmax", {b.Input("x", dims, DataType::kUint8, 0.05f, 0)}, dims, attrs), DataType::kUint8,
             1.f / 256, 0);
    QFUSE_ASSERT_OK_AND_ASSIGN(Result r, RunGraph(b.graph(), {{"x", Tensor::FromVector<uint8_t>(dims, data)}}, true, kOnnx));
    EXPECT_EQ(r.ops.at("QLinearSoftmax"), 1);
    out.push_back(r.values);
  }
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 5; ++k) {
      for (int j = 0; j < 3; ++j) EXPECT_EQ(out[0][(n * 5 + k) * 3 + j], out[1][(n * 3 + j) * 5 + k]);
    }
  }
}

TEST(Int8OpsTest, AccumulatorOverflowIsRefusedNamingTheNode) {
  // K = 140000 products of |x| <= 128 and |w| = 127 can exceed 2^31 - 1.
  const int64_t k = 140000;
  QdqGraph b;
  Value* x = b.Input("x", {1, k}, 1.f, 0);
  Value* w = b.Weights("w", {k, 1}, std::vector<int8_t>(k, 127), {1.f}, 1);
  b.Output(b.Op("MatMul", {x, w}, {1, 1}), 1.f, 0);
  absl::StatusOr<std::unique_ptr<Executor>> exec = Executor::Create(b.graph());
  ASSERT_FALSE(exec.ok());
  EXPECT_EQ(exec.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(exec.status().message().find("MatMul1"), std::string::npos) << exec.status();
  EXPECT_NE(exec.status().message().find("could overflow"), std::string::npos) << exec.status();
  // The simulated path still runs it.
  ExecutorOptions simulated;
  simulated.integer_kernels = false;
  QFUSE_EXPECT_OK(Executor::Create(b.graph(), simulated).status());
}

}  // namespace
}  // namespace qfuse::runtime
