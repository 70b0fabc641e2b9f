// Pattern (l) of the QDQ lowering (runtime/int8/channel_map_fusion.h): DequantizeLinear ->
// [Concat] -> Mul -> Add -> [Relu | Clip] -> QuantizeLinear becomes one QLinearChannelMap whose
// bytes equal the float ops' (INT8 and UINT8 inputs covering every byte, a FLOAT Concat input,
// per-channel and one-value constants in both broadcast forms, each clamp), and a MaxPool of a
// dequantized value that two such groups read runs on the bytes with the same result.
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

using ir::DataType;

struct Ran {
  std::vector<uint8_t> bytes;      // every output's bytes, one after the other
  std::map<std::string, int> ops;  // of the graph that ran
};

absl::StatusOr<Ran> RunGraph(const ir::Graph& graph, const std::vector<NamedTensor>& inputs, bool integer) {
  ExecutorOptions options;
  options.integer_kernels = integer;
  QFUSE_ASSIGN_OR_RETURN(auto exec, Executor::Create(graph, options));
  QFUSE_ASSIGN_OR_RETURN(auto out, exec->Run(inputs));
  Ran r;
  for (const NamedTensor& o : out) {
    const auto* d = static_cast<const uint8_t*>(o.tensor.raw_data());
    r.bytes.insert(r.bytes.end(), d, d + o.tensor.byte_size());
  }
  for (const ir::Node* n : exec->graph().nodes()) ++r.ops[n->op_type()];
  return r;
}

// A FLOAT constant of `n` values with dims `dims`, spread over [lo, hi].
ir::Value* Constant(testing::QdqGraph& b, const std::string& name, const std::vector<int64_t>& dims, int64_t n,
                    float lo, float hi) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * static_cast<float>((i * 7) % (n + 1)) / (n + 1);
  return *b.graph().AddConstant(name, ir::Tensor::FromVector<float>(dims, v));
}

ir::Tensor Bytes(DataType type, const std::vector<int64_t>& dims, int seed) {
  ir::Tensor t(type, dims);
  uint8_t* d = t.mutable_values<uint8_t>().data();
  for (int64_t i = 0; i < t.num_elements(); ++i) d[i] = static_cast<uint8_t>(i * 31 + seed);  // every byte
  return t;
}

TEST(ChannelMapFusionTest, ConcatBatchNormClampAsTheFloatOps) {
  const std::vector<int64_t> a_dims = {2, 3, 8, 8}, b_dims = {2, 5, 8, 8}, f_dims = {2, 2, 8, 8};
  const std::vector<int64_t> y_dims = {2, 10, 8, 8};
  struct Case {
    std::string clamp;  // "", "Relu", "Clip"
    bool float_input, per_channel, nchw_constants;
  };
  for (const Case& c : {Case{"Relu", true, true, false}, Case{"Clip", false, true, true}, Case{"", true, false, false},
                        Case{"Relu", false, false, true}}) {
    testing::QdqGraph g;
    ir::Value* a = g.Input("a", a_dims, DataType::kUint8, 0.03f, 100);
    ir::Value* b = g.Input("b", b_dims, DataType::kInt8, 0.05f, -4);
    std::vector<ir::Value*> parts = {a, b};
    std::vector<int64_t> dims = {2, 8, 8, 8};
    if (c.float_input) {
      parts.push_back(*g.graph().AddInput("f", testing::Type(DataType::kFloat32, f_dims)));
      dims = y_dims;
    }
    ir::AttributeMap axis;
    axis.Set("axis", int64_t{1});
    ir::Value* x = g.Op("Concat", parts, dims, axis);
    const int64_t ch = dims[1];
    const std::vector<int64_t> cdims = !c.per_channel     ? std::vector<int64_t>{}
                                       : c.nchw_constants ? std::vector<int64_t>{1, ch, 1, 1}
                                                          : std::vector<int64_t>{ch, 1, 1};
    const int64_t n = c.per_channel ? ch : 1;
    x = g.Op("Mul", {x, Constant(g, "scale", cdims, n, -1.7f, 2.3f)}, dims);
    x = g.Op("Add", {Constant(g, "shift", cdims, n, -0.9f, 1.1f), x}, dims);
    if (c.clamp == "Relu") x = g.Op("Relu", {x}, dims);
    if (c.clamp == "Clip") x = g.Op("Clip", {x, g.FloatConst("lo", 0.f), g.FloatConst("hi", 1.5f)}, dims);
    g.Output(x, DataType::kUint8, 0.02f, 60);
    std::vector<NamedTensor> inputs = {{"a", Bytes(DataType::kUint8, a_dims, 1)},
                                       {"b", Bytes(DataType::kInt8, b_dims, 7)}};
    if (c.float_input) {
      ir::Tensor f(DataType::kFloat32, f_dims);
      std::mt19937 rng(3);
      std::uniform_real_distribution<float> u(-3.f, 3.f);
      for (float& v : f.mutable_values<float>()) v = u(rng);
      inputs.push_back({"f", f});
    }
    QFUSE_ASSERT_OK_AND_ASSIGN(Ran want, RunGraph(g.graph(), inputs, false));
    QFUSE_ASSERT_OK_AND_ASSIGN(Ran got, RunGraph(g.graph(), inputs, true));
    const std::string what = c.clamp + (c.float_input ? " with a FLOAT input" : "");
    EXPECT_EQ(got.ops["QLinearChannelMap"], 1) << what;
    for (const char* op : {"Concat", "Mul", "Add", "Relu", "Clip", "DequantizeLinear", "QuantizeLinear"}) {
      EXPECT_EQ(got.ops.count(op), 0u) << op << " left, " << what;
    }
    EXPECT_EQ(got.bytes, want.bytes) << what;
  }
}

// DenseNet's stem: MaxPool(DQ(x)) read by the Concats of two layers. The pool moves onto the
// bytes (DQ(MaxPool(x))) and both groups become QLinearChannelMap (the first checked through a
// requantization to a float output); a lone DQ(x) -> Mul -> Add -> Q (no Concat) too.
TEST(ChannelMapFusionTest, PooledSharedInputAndSingleInput) {
  const std::vector<int64_t> x_dims = {1, 4, 9, 9}, p_dims = {1, 4, 5, 5};
  testing::QdqGraph g;
  ir::Value* x = g.Input("x", x_dims, DataType::kUint8, 0.04f, 7);
  ir::AttributeMap window;
  window.Set("kernel_shape", std::vector<int64_t>{3, 3});
  window.Set("strides", std::vector<int64_t>{2, 2});
  window.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Value* pooled = g.Op("MaxPool", {x}, p_dims, window);
  ir::Value* other = g.Input("o", p_dims, DataType::kUint8, 0.02f, 0);
  ir::AttributeMap axis;
  axis.Set("axis", int64_t{1});
  for (int layer = 0; layer < 2; ++layer) {
    const std::string k = std::to_string(layer);
    const int64_t ch = 4 + 4 * layer;
    ir::Value* c = g.Op("Concat", layer == 0 ? std::vector<ir::Value*>{pooled} : std::vector<ir::Value*>{pooled, other},
                        {1, ch, 5, 5}, axis);
    c = g.Op("Mul", {c, Constant(g, "s" + k, {ch, 1, 1}, ch, 0.5f, 1.5f)}, {1, ch, 5, 5});
    c = g.Op("Relu", {g.Op("Add", {c, Constant(g, "b" + k, {ch, 1, 1}, ch, -0.3f, 0.3f)}, {1, ch, 5, 5})},
             {1, ch, 5, 5});
    // The first layer's bytes through a requantization and DequantizeLinear (a float output).
    if (layer == 0) g.FloatOutput(g.QuantizeDequantize(c, DataType::kUint8, 0.03f, 0));
    if (layer == 1) g.Output(c, DataType::kUint8, 0.03f, 0);
  }
  const std::vector<NamedTensor> inputs = {{"x", Bytes(DataType::kUint8, x_dims, 3)},
                                           {"o", Bytes(DataType::kUint8, p_dims, 5)}};
  QFUSE_ASSERT_OK_AND_ASSIGN(Ran want, RunGraph(g.graph(), inputs, false));
  QFUSE_ASSERT_OK_AND_ASSIGN(Ran got, RunGraph(g.graph(), inputs, true));
  EXPECT_EQ(got.ops["QLinearChannelMap"], 2);
  EXPECT_EQ(got.ops["MaxPool"], 1);
  EXPECT_EQ(got.bytes, want.bytes);

  testing::QdqGraph one;  // DQ(z) -> Mul -> Add -> Q, one-value constants
  ir::Value* z = one.Op("Mul", {one.Input("z", p_dims, DataType::kInt8, 0.1f, 3), one.FloatConst("s", 0.7f)}, p_dims);
  one.Output(one.Op("Add", {z, one.FloatConst("b", -0.2f)}, p_dims), DataType::kInt8, 0.05f, -1);
  QFUSE_ASSERT_OK_AND_ASSIGN(Ran want_one, RunGraph(one.graph(), {{"z", Bytes(DataType::kInt8, p_dims, 11)}}, false));
  QFUSE_ASSERT_OK_AND_ASSIGN(Ran got_one, RunGraph(one.graph(), {{"z", Bytes(DataType::kInt8, p_dims, 11)}}, true));
  EXPECT_EQ(got_one.ops["QLinearChannelMap"], 1);
  EXPECT_EQ(got_one.bytes, want_one.bytes);
}

// One int8 value behind two DequantizeLinears with other scales: the kernel reads one set of
// parameters per value, so the group stays float.
TEST(ChannelMapFusionTest, OneValueWithTwoDequantizationsStaysFloat) {
  const std::vector<int64_t> dims = {1, 3, 4, 4}, y_dims = {1, 6, 4, 4};
  testing::QdqGraph g;
  ir::Value* x = g.Input("x", dims, DataType::kUint8, 0.1f, 0);
  ir::Value* raw = g.graph().inputs()[0];
  ir::Value* s2 = *g.graph().AddConstant("s2", ir::Tensor::Scalar<float>(0.2f));
  ir::Value* z2 = *g.graph().AddConstant("z2", ir::Tensor::Scalar<uint8_t>(0));
  ir::Node* dq2 = *g.graph().AddNode("DequantizeLinear", "dq2", {raw, s2, z2}, {"x_dq2"});
  dq2->output(0)->mutable_type() = testing::Type(DataType::kFloat32, dims);
  ir::AttributeMap axis;
  axis.Set("axis", int64_t{1});
  ir::Value* c = g.Op("Concat", {x, dq2->output(0)}, y_dims, axis);
  c = g.Op("Add", {g.Op("Mul", {c, g.FloatConst("s", 0.9f)}, y_dims), g.FloatConst("b", 0.1f)}, y_dims);
  g.Output(c, DataType::kUint8, 0.05f, 0);
  const std::vector<NamedTensor> inputs = {{"x", Bytes(DataType::kUint8, dims, 2)}};
  QFUSE_ASSERT_OK_AND_ASSIGN(Ran want, RunGraph(g.graph(), inputs, false));
  QFUSE_ASSERT_OK_AND_ASSIGN(Ran got, RunGraph(g.graph(), inputs, true));
  EXPECT_EQ(got.ops.count("QLinearChannelMap"), 0u);
  EXPECT_EQ(got.bytes, want.bytes);
}

}  // namespace
}  // namespace qfuse::runtime
