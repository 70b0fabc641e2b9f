// The integer-head form of a unit (quant/integer_heads.h): which units are rewritten and into
// what, and that qfuse's integer runtime, lowering the form back to one QLinearUnit
// (kDequantizedEpilogueAttr), gives the bytes the form's own ONNX ops give when run one by one
// (ConvInteger, Add, DequantizeLinear, Add, Relu/Clip, QuantizeLinear: the reference kernels,
// which is what onnxruntime runs), under every ISA cap.
#include "quant/integer_heads.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "runtime/executor.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/output_stage.h"
#include "runtime/int8/qdq_lowering.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::quant {
namespace {

using ir::DataType;
using ir::Tensor;
using ir::Value;

constexpr int64_t kCin = 5, kCout = 7;
const std::vector<int64_t> kXDims = {4, kCin, 6, 6};
const std::vector<int64_t> kYDims = {4, kCout, 6, 6};

ir::TensorType Type(DataType t, const std::vector<int64_t>& dims) { return {t, ir::Shape::FromDims(dims), {}}; }

// Scales where the one-multiplier rounding of QLinearConv and the form's dequantize-add-divide
// differ on about 0.1% of accumulators (the hand-computed case of output_stage_test), so a
// lowering that requantized the QLinearConv way would fail below.
// A converted unit as quant/qdq_converter.h leaves it: DQ(x uint8, zp 128) -> QuantUnit(Conv 3x3
// pad 1, DQ(w int8 per channel), DQ(bias int32 at s_x * s_w[c]), [DQ(r uint8)]) -> Q(uint8) -> y.
class UnitGraph {
 public:
  // `float_output`: the unit's float output is the graph output (no QuantizeLinear);
  // `plain_conv`: a plain Conv instead of a unit (levels `bn` and `none`; no activation or residual).
  UnitGraph(ir::UnitActivation activation, bool residual, bool bias, std::mt19937& rng, bool float_output = false,
            bool plain_conv = false) {
    Value* x = Dq(*g_.AddInput("x", Type(DataType::kUint8, kXDims)), kSx, kXDims);
    std::uniform_int_distribution<int> w8(-127, 127), b32(-4000, 4000);
    std::vector<int8_t> w(kCout * kCin * 9);
    for (int8_t& v : w) v = static_cast<int8_t>(w8(rng));
    std::vector<float> ws;
    std::vector<int32_t> b(kCout);
    for (int64_t c = 0; c < kCout; ++c) ws.push_back(0.02f * static_cast<float>(c + 1));
    for (int32_t& v : b) v = b32(rng);
    std::vector<float> bs;
    for (float s : ws) bs.push_back(kSx * s);
    std::vector<Value*> inputs = {x, Constant("w", Tensor::FromVector<int8_t>({kCout, kCin, 3, 3}, w), ws,
                                              Tensor(DataType::kInt8, {kCout}), {kCout, kCin, 3, 3})};
    inputs.push_back(bias ? Constant("bias", Tensor::FromVector<int32_t>({kCout}, b), bs,
                                     Tensor(DataType::kInt32, {kCout}), {kCout})
                          : nullptr);
    if (residual) inputs.push_back(Dq(*g_.AddInput("r", Type(DataType::kUint8, kYDims)), 0.07f, kYDims));
    ir::AttributeMap attrs;
    attrs.Set("kernel_shape", std::vector<int64_t>{3, 3});
    attrs.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    ir::UnitSpec spec = activation == ir::UnitActivation::kRelu6 ? ir::ClipSpec(0.f, 6.f) : ir::UnitSpec{};
    spec.activation = activation;
    if (plain_conv) inputs.resize(3);
    if (!plain_conv) ir::WriteUnitSpec(spec, &attrs);
    ir::Node* unit = plain_conv ? *g_.AddNode("Conv", "unit", inputs, {"y_float"}, attrs)
                                : *g_.AddNode(ir::kUnitOpType, "unit", inputs, {"y_float"}, attrs, ir::kQfuseDomain);
    unit->output(0)->mutable_type() = Type(DataType::kFloat32, kYDims);
    if (float_output) {
      (void)g_.MarkOutput(unit->output(0));
      return;
    }
    ir::Node* q = *g_.AddNode("QuantizeLinear", "q", {unit->output(0), Scalar("y_s", 0.3f), U8("y_zp", 128)}, {"y"});
    q->output(0)->mutable_type() = Type(DataType::kUint8, kYDims);
    (void)g_.MarkOutput(q->output(0));
  }
  ir::Graph& graph() { return g_; }

 private:
  static constexpr float kSx = 0.05f;
  Value* Scalar(const std::string& name, float v) { return *g_.AddConstant(name, Tensor::Scalar<float>(v)); }
  Value* U8(const std::string& name, uint8_t v) { return *g_.AddConstant(name, Tensor::Scalar<uint8_t>(v)); }
  Value* Dq(Value* q, float scale, const std::vector<int64_t>& dims) {
    ir::Node* n = *g_.AddNode("DequantizeLinear", q->name() + "_dq",
                              {q, Scalar(q->name() + "_s", scale), U8(q->name() + "_zp", 128)}, {q->name() + "_f"});
    n->output(0)->mutable_type() = Type(DataType::kFloat32, dims);
    return n->output(0);
  }
  Value* Constant(const std::string& name, Tensor data, const std::vector<float>& scales, Tensor zero_points,
                  const std::vector<int64_t>& dims) {
    Value* d = *g_.AddConstant(name, std::move(data));
    Value* s = *g_.AddConstant(name + "_s", Tensor::FromVector<float>({static_cast<int64_t>(scales.size())}, scales));
    Value* z = *g_.AddConstant(name + "_zp", std::move(zero_points));
    ir::AttributeMap attrs;
    attrs.Set("axis", int64_t{0});
    ir::Node* n = *g_.AddNode("DequantizeLinear", name + "_dq", {d, s, z}, {name + "_f"}, attrs);
    n->output(0)->mutable_type() = Type(DataType::kFloat32, dims);
    return n->output(0);
  }
  ir::Graph g_;
};

using testing::OpCounts;

TEST(IntegerHeadsTest, ResidualReluUnitBecomesTheIntegerHead) {
  std::mt19937 rng(7);
  UnitGraph b(ir::UnitActivation::kRelu, /*residual=*/true, /*bias=*/true, rng);
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t written, WriteIntegerHeads(&b.graph()));
  EXPECT_EQ(written, 1);
  b.graph().RemoveUnusedConstants();
  QFUSE_EXPECT_OK(b.graph().Verify());
  EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{"ConvInteger", 1},
                                                              {"Add", 2},
                                                              {"DequantizeLinear", 2},
                                                              {"Relu", 1},
                                                              {"QuantizeLinear", 1}}));
  const ir::Node* conv = b.graph().FindValue("x")->uses()[0].node;
  EXPECT_EQ(conv->op_type(), "ConvInteger");
  EXPECT_EQ(conv->name(), "unit");
  // Weights shifted to UINT8 around 128; the bias [M, 1, 1]; d_a = float32(s_x * s_w[c]).
  const Tensor& w = *conv->input(1)->initializer();
  ASSERT_EQ(w.dtype(), DataType::kUint8);
  const Tensor& zp = *conv->input(3)->initializer();
  EXPECT_EQ(zp.values<uint8_t>()[0], 128);
  const ir::Node* add = conv->output(0)->uses()[0].node;
  EXPECT_EQ(add->input(1)->initializer()->dims(), (std::vector<int64_t>{kCout, 1, 1}));
  const ir::Node* dq = add->output(0)->uses()[0].node;
  ASSERT_EQ(dq->op_type(), "DequantizeLinear");
  EXPECT_EQ(dq->attrs().GetInt("axis", -1).value(), 1);
  const Tensor& scales = *dq->input(1)->initializer();
  for (int64_t c = 0; c < kCout; ++c) EXPECT_EQ(scales.values<float>()[c], 0.05f * (0.02f * static_cast<float>(c + 1)));
}

TEST(IntegerHeadsTest, PlainUnitsKeepTheQdqForm) {
  std::mt19937 rng(8);
  UnitGraph plain(ir::UnitActivation::kNone, /*residual=*/false, /*bias=*/true, rng);  // QLinearConv runs it
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t written, WriteIntegerHeads(&plain.graph()));
  EXPECT_EQ(written, 0);
  EXPECT_EQ(OpCounts(plain.graph())[ir::kUnitOpType], 1);
  // A plain Conv (levels bn, none) whose output a QuantizeLinear reads: also QLinearConv's.
  UnitGraph conv(ir::UnitActivation::kNone, /*residual=*/false, /*bias=*/true, rng, /*float_output=*/false,
                 /*plain_conv=*/true);
  QFUSE_ASSERT_OK_AND_ASSIGN(written, WriteIntegerHeads(&conv.graph()));
  EXPECT_EQ(written, 0);
  EXPECT_EQ(OpCounts(conv.graph())["Conv"], 1);
}

// A plain unit whose float output is the graph output (a segmentation head): onnxruntime would
// run its float Conv, so it is written as ConvInteger -> Add bias -> DequantizeLinear -> output.
TEST(IntegerHeadsTest, PlainUnitWithAFloatGraphOutputBecomesTheIntegerHead) {
  std::mt19937 rng(10);
  for (bool plain_conv : {false, true}) {
    SCOPED_TRACE(plain_conv ? "a plain Conv" : "a unit");
    UnitGraph head(ir::UnitActivation::kNone, /*residual=*/false, /*bias=*/true, rng, /*float_output=*/true,
                   plain_conv);
    QFUSE_ASSERT_OK_AND_ASSIGN(int64_t written, WriteIntegerHeads(&head.graph()));
    EXPECT_EQ(written, 1);
    head.graph().RemoveUnusedConstants();
    QFUSE_EXPECT_OK(head.graph().Verify());
    EXPECT_EQ(OpCounts(head.graph()),
              (std::map<std::string, int>{{"ConvInteger", 1}, {"Add", 1}, {"DequantizeLinear", 1}}));
    const ir::Value* y = head.graph().outputs()[0];
    ASSERT_NE(y->producer(), nullptr);
    EXPECT_EQ(y->producer()->op_type(), "DequantizeLinear");
    EXPECT_EQ(y->name(), "y_float");  // the graph output keeps its name
    EXPECT_EQ(y->type().dtype, DataType::kFloat32);
  }
}

// Runs `graph` on random uint8 inputs op by op (the ONNX ops' reference kernels) and lowered to
// integer kernels; the outputs must be the same bytes.
void ExpectLoweredEqualsOpByOp(const ir::Graph& graph, bool residual, std::mt19937& rng) {
  std::uniform_int_distribution<int> u8(0, 255);
  std::vector<ir::NamedTensor> in;
  Tensor x(DataType::kUint8, kXDims);
  for (uint8_t& v : x.mutable_values<uint8_t>()) v = static_cast<uint8_t>(u8(rng));
  in.push_back({"x", std::move(x)});
  if (residual) {
    Tensor r(DataType::kUint8, kYDims);
    for (uint8_t& v : r.mutable_values<uint8_t>()) v = static_cast<uint8_t>(u8(rng));
    in.push_back({"r", std::move(r)});
  }
  // The integer path runs one QLinearUnit, not the form's ops.
  std::unique_ptr<ir::Graph> lowered = graph.Clone();
  QFUSE_ASSERT_OK_AND_ASSIGN(runtime::int8::LoweringStats stats, runtime::int8::LowerQdqToInteger(lowered.get()));
  EXPECT_EQ(stats.units, 1);
  EXPECT_EQ(OpCounts(*lowered), (std::map<std::string, int>{{runtime::int8::kQLinearUnitOp, 1}}));
  runtime::ExecutorOptions op_by_op;
  op_by_op.integer_kernels = false;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto reference_exec, runtime::Executor::Create(graph, op_by_op));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto reference, reference_exec->Run(in));
  for (auto isa : {runtime::int8::RequantizeIsa::kScalar, runtime::int8::RequantizeIsa::kAvx2,
                   runtime::int8::RequantizeIsa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(runtime::int8::MaxRequantizeIsa())) continue;
    runtime::int8::SetRequantizeIsa(isa);
    QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, runtime::Executor::Create(graph));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto got, exec->Run(in));
    const Tensor& want = reference[0].tensor;
    const Tensor& have = got[0].tensor;
    ASSERT_EQ(have.dtype(), want.dtype());
    ASSERT_EQ(have.num_elements(), want.num_elements());
    // Bytes: uint8 outputs, or the bits of float outputs.
    const int64_t bytes = want.num_elements() * (want.dtype() == DataType::kFloat32 ? 4 : 1);
    const auto* w = static_cast<const uint8_t*>(want.raw_data());
    const auto* h = static_cast<const uint8_t*>(have.raw_data());
    int64_t differ = 0;
    for (int64_t i = 0; i < bytes; ++i) differ += w[i] != h[i];
    EXPECT_EQ(differ, 0) << "of " << bytes << " bytes at requantize isa " << static_cast<int>(isa);
  }
  runtime::int8::SetRequantizeIsa(runtime::int8::RequantizeIsa::kAvx512);
}

TEST(IntegerHeadsTest, LoweredUnitEqualsTheFormRunOpByOp) {
  std::mt19937 rng(9);
  for (ir::UnitActivation act :
       {ir::UnitActivation::kRelu, ir::UnitActivation::kRelu6, ir::UnitActivation::kNone, ir::UnitActivation::kSilu,
        ir::UnitActivation::kSigmoid, ir::UnitActivation::kHardSwish}) {
    for (bool residual : {false, true}) {
      for (bool bias : {false, true}) {
        for (bool float_output : {false, true}) {
          if (act == ir::UnitActivation::kNone && !residual && !float_output) continue;  // not rewritten
          SCOPED_TRACE(::testing::Message() << "activation " << ir::UnitActivationName(act) << " residual " << residual
                                            << " bias " << bias << " float output " << float_output);
          UnitGraph b(act, residual, bias, rng, float_output);
          QFUSE_ASSERT_OK_AND_ASSIGN(int64_t written, WriteIntegerHeads(&b.graph()));
          ASSERT_EQ(written, 1);
          b.graph().RemoveUnusedConstants();
          ExpectLoweredEqualsOpByOp(b.graph(), residual, rng);
        }
      }
    }
  }
  for (bool bias : {false, true}) {  // a plain Conv with a float graph output (levels `bn`, `none`)
    SCOPED_TRACE(::testing::Message() << "plain Conv, bias " << bias);
    UnitGraph b(ir::UnitActivation::kNone, /*residual=*/false, bias, rng, /*float_output=*/true, /*plain_conv=*/true);
    QFUSE_ASSERT_OK_AND_ASSIGN(int64_t written, WriteIntegerHeads(&b.graph()));
    ASSERT_EQ(written, 1);
    b.graph().RemoveUnusedConstants();
    ExpectLoweredEqualsOpByOp(b.graph(), /*residual=*/false, rng);
  }
}

}  // namespace
}  // namespace qfuse::quant
