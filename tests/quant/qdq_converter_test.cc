// QDQ conversion of the calibrated sample model at each fusion level: where Q/DQ pairs
// go, how weights and biases are stored, that the result is a valid opset-13 ONNX model,
// and that (simulated) int8 inference stays close to float.
#include "quant/qdq_converter.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "calib/calibrator.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "runtime/executor.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::quant {
namespace {

using testing::OpCounts;

// The scale of every value a QuantizeLinear quantizes.
std::map<std::string, float> QuantizedScales(const ir::Graph& g) {
  std::map<std::string, float> scales;
  for (const ir::Node* n : g.nodes()) {
    if (n->op_type() == "QuantizeLinear") scales[n->input(0)->name()] = n->input(1)->initializer()->data<float>()[0];
  }
  return scales;
}

// The scale and UINT8 zero point of every value a QuantizeLinear quantizes.
std::map<std::string, std::pair<float, int>> QuantizedUint8Grids(const ir::Graph& g) {
  std::map<std::string, std::pair<float, int>> grids;
  for (const ir::Node* n : g.nodes()) {
    if (n->op_type() != "QuantizeLinear") continue;
    grids[n->input(0)->name()] = {n->input(1)->initializer()->data<float>()[0],
                                  n->input(2)->initializer()->data<uint8_t>()[0]};
  }
  return grids;
}

using Quantized = testing::QuantizedSample;

absl::StatusOr<Quantized> QuantizeResnet(fusion::FusionLevel level, const ConvertOptions& options = {}) {
  return testing::QuantizeSampleWith("resnet_small", level, calib::ThresholdOptions(), options);
}

TEST(QdqConverterTest, FullLevelQuantizesOnlyUnitBoundaries) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Quantized q, QuantizeResnet(fusion::FusionLevel::kFull));
  const auto ops = OpCounts(*q.model.graph);
  const int units = ops.at(ir::kUnitOpType);
  EXPECT_EQ(units, 12);  // 11 convs + the classifier
  EXPECT_EQ(q.stats.quantized_weights, units);
  // One Q/DQ per quantized activation, plus one DQ per weight and per bias.
  EXPECT_EQ(ops.at("QuantizeLinear"), q.stats.quantized_activations);
  EXPECT_EQ(ops.at("DequantizeLinear"), q.stats.quantized_activations + 2 * units);
  // Every unit reads its X (and residual) through DequantizeLinear, and no unit output
  // is requantized inside a unit: unit outputs feed Q (or are the graph output).
  for (const ir::Node* n : q.model.graph->nodes()) {
    if (!ir::IsUnit(*n)) continue;
    for (int i : {ir::kUnitX, ir::kUnitW, ir::kUnitBias, ir::kUnitResidual}) {
      const ir::Value* in = n->input(i);
      if (in == nullptr) continue;
      ASSERT_NE(in->producer(), nullptr) << n->Describe() << " input " << i;
      EXPECT_EQ(in->producer()->op_type(), "DequantizeLinear") << n->Describe() << " input " << i;
    }
    // Weights: per-channel int8 along the output-channel axis; bias int32.
    const ir::Node* wdq = n->input(ir::kUnitW)->producer();
    EXPECT_EQ(wdq->input(0)->initializer()->dtype(), ir::DataType::kInt8);
    EXPECT_GT(wdq->input(1)->initializer()->num_elements(), 1);
    const ir::Node* bdq = n->input(ir::kUnitBias)->producer();
    EXPECT_EQ(bdq->input(0)->initializer()->dtype(), ir::DataType::kInt32);
    for (const ir::Value* out : n->outputs()) {
      for (const ir::Use& use : out->uses()) EXPECT_EQ(use.node->op_type(), "QuantizeLinear") << n->Describe();
    }
  }
  EXPECT_EQ(q.model.graph->outputs()[0]->producer()->op_type(), ir::kUnitOpType);  // logits stay float
  EXPECT_EQ(q.model.opset, 13);
}

TEST(QdqConverterTest, LevelsQuantizeMoreTensorsAsFusionDrops) {
  int64_t previous = 0;
  for (fusion::FusionLevel level : {fusion::FusionLevel::kFull, fusion::FusionLevel::kBn, fusion::FusionLevel::kNone}) {
    SCOPED_TRACE(fusion::FusionLevelName(level));
    QFUSE_ASSERT_OK_AND_ASSIGN(Quantized q, QuantizeResnet(level));
    EXPECT_GT(q.stats.quantized_activations, previous);
    previous = q.stats.quantized_activations;
    if (level == fusion::FusionLevel::kNone) {
      EXPECT_EQ(OpCounts(*q.model.graph).at("BatchNormalization"), 11);
      // BN has no int8 form: float between DQ and Q; so do the 5 Relus that read a BN (the other
      // 4 read an int8 Add and stay int8).
      EXPECT_EQ(q.stats.float_ops, 11 + 5);
    }
    // A standard ONNX model at opset 13 that passes onnx's checker, units expanded.
    QFUSE_ASSERT_OK_AND_ASSIGN(onnx::ModelProto proto, ir::ExportModel(q.model));
    EXPECT_EQ(proto.opset_import(0).version(), 13);
    for (const auto& n : proto.graph().node()) EXPECT_TRUE(n.domain().empty()) << n.op_type();
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model back, ir::ImportModel(proto, "", "exported"));
  }
}

TEST(QdqConverterTest, SimulatedInt8StaysCloseToFloat) {
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/resnet_small"));
  QFUSE_ASSERT_OK_AND_ASSIGN(Quantized q, QuantizeResnet(fusion::FusionLevel::kFull));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, runtime::Executor::Create(*q.model.graph));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto outputs, exec->Run(tc.inputs));
  const ir::Tensor& expected = tc.expected[0].tensor;
  const ir::Tensor& actual = outputs[0].tensor;
  int agree = 0;
  const int64_t classes = expected.dims()[1];
  for (int64_t i = 0; i < expected.dims()[0]; ++i) {
    auto e = expected.values<float>().subspan(i * classes, classes);
    auto a = actual.values<float>().subspan(i * classes, classes);
    agree += (std::max_element(e.begin(), e.end()) - e.begin()) == (std::max_element(a.begin(), a.end()) - a.begin());
  }
  EXPECT_GE(agree, 97) << "top-1 agreement with float on 100 test images";
}

TEST(QdqConverterTest, KeepFloatAndMissingTensorsAndUnknownNodes) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Quantized base, QuantizeResnet(fusion::FusionLevel::kFull));
  (void)base;
  ConvertOptions options;
  options.keep_float = {"no_such_node"};
  absl::StatusOr<Quantized> bad = QuantizeResnet(fusion::FusionLevel::kFull, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  // A table without an activation is refused naming the tensor.
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, ir::LoadModel("models/resnet_small/model.onnx"));
  QFUSE_ASSERT_OK(fusion::Fuse(&model, fusion::FusionLevel::kFull).status());
  calib::CalibrationTable empty;
  absl::StatusOr<ConversionStats> missing = ConvertToQdq(&model, empty, {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'input' is not in the calibration table"), std::string::npos)
      << missing.status();
}

// A unit whose bias does not fit beside its worst-case accumulation (the failure seen on a real
// detector: K * 128 * 127 + |bias| > 2^31 - 1 with |bias| near 2^31) no longer aborts the level:
// its weight scales widen when that moves the channel's output by at most
// max_widened_output_error of its bias (the default 1/256 always allows it here: the bound is
// about K * 128 / 2^32), else the unit stays float. One note each.
TEST(QdqConverterTest, OversizedBiasWidensOrKeepsTheUnitFloat) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      testing::QuantizedSample run,
      testing::CalibrateSample("resnet_small", fusion::FusionLevel::kFull, calib::ThresholdOptions(), ConvertOptions(), 16));
  ir::Model& model = run.model;
  // The first unit with a bias: scale its bias so the unwidened int32 bias is about 2^31 - 2^21.
  ir::Node* unit = nullptr;
  for (ir::Node* n : model.graph->nodes()) {
    if (ir::IsUnit(*n) && n->input(ir::kUnitBias) != nullptr && unit == nullptr) unit = n;
  }
  ASSERT_NE(unit, nullptr);
  const float x_scale = run.table.Find(unit->input(0)->name())->scale;
  const ir::Tensor& w = *unit->input(ir::kUnitW)->initializer();
  float w_max = 0;
  for (float v : w.values<float>()) w_max = std::max(w_max, std::fabs(v));
  ir::Tensor bias = *unit->input(ir::kUnitBias)->initializer();
  for (float& b : bias.mutable_values<float>()) b = 0;
  const double s_w = w_max / 127.0;  // channel 0's scale is at most this
  bias.mutable_values<float>()[0] = static_cast<float>((2147483648.0 - 2097152.0) * x_scale * s_w);
  model.graph->SetConstantData(unit->input(ir::kUnitBias), bias);
  const std::string name = unit->name();
  for (double budget : {-1.0, 1e-9}) {  // -1: the default
    SCOPED_TRACE(budget);
    ir::Model copy;
    copy.opset = model.opset;
    copy.graph = model.graph->Clone();
    ConvertOptions options;
    if (budget > 0) options.max_widened_output_error = budget;
    QFUSE_ASSERT_OK_AND_ASSIGN(ConversionStats stats, ConvertToQdq(&copy, run.table, options));
    ASSERT_EQ(stats.notes.size(), 1u);
    EXPECT_NE(stats.notes[0].find(name), std::string::npos) << stats.notes[0];
    const ir::Node* converted = nullptr;
    for (const ir::Node* n : copy.graph->nodes()) {
      if (n->name() == name) converted = n;
    }
    ASSERT_NE(converted, nullptr);
    if (budget < 0) {  // widened: quantized weights, and the integer runtime accepts the bound
      EXPECT_NE(stats.notes[0].find("widened the weight scale of 1 channel"), std::string::npos) << stats.notes[0];
      EXPECT_EQ(stats.bias_float_layers, 0);
      EXPECT_GE(stats.widened_bias_channels, 1);
      EXPECT_EQ(converted->input(ir::kUnitW)->producer()->op_type(), "DequantizeLinear");
      QFUSE_EXPECT_OK(runtime::Executor::Create(*copy.graph).status());
    } else {  // kept float: its weights stay FLOAT constants
      EXPECT_EQ(stats.bias_float_layers, 1);
      EXPECT_NE(stats.notes[0].find("kept float"), std::string::npos) << stats.notes[0];
      EXPECT_TRUE(converted->input(ir::kUnitW)->is_constant());
      QFUSE_EXPECT_OK(runtime::Executor::Create(*copy.graph).status());
    }
  }
}

// Q/DQ go on values an int8 op reads or writes, never between two float ops: in a SiLU
// (Conv -> Sigmoid -> Mul(conv, sigmoid) -> Conv) the Sigmoid output stays float, the Conv
// outputs and the Mul output (read by the second Conv) are quantized.
TEST(QdqConverterTest, NoQdqBetweenTwoFloatOps) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 4, 4});
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {2, 2, 1, 1})}, "c1", {1, 2, 4, 4});
  ir::Value* sig = b.Op("Sigmoid", {c1}, "sig", {1, 2, 4, 4});
  ir::Value* silu = b.Op("Mul", {c1, sig}, "silu", {1, 2, 4, 4});
  ir::Value* y = b.Op("Conv", {silu, b.Random("w2", {2, 2, 1, 1})}, "y", {1, 2, 4, 4});
  QFUSE_ASSERT_OK(b.graph().MarkOutput(y));
  calib::CalibrationTable table;
  for (const char* name : {"x", "c1", "sig", "silu", "y"}) table.tensors.push_back({name, 2.f, 2.f / 127, -2.f, 2.f});
  std::sort(table.tensors.begin(), table.tensors.end(),
            [](const calib::TensorRange& a, const calib::TensorRange& c) { return a.name < c.name; });
  QFUSE_ASSERT_OK_AND_ASSIGN(ConversionStats stats, ConvertToQdq(&b.model(), table, {}));
  std::set<std::string> quantized;
  for (const ir::Node* n : b.graph().nodes()) {
    if (n->op_type() == "QuantizeLinear") quantized.insert(n->input(0)->name());
  }
  EXPECT_EQ(quantized, (std::set<std::string>{"x", "c1", "silu"}));
  EXPECT_EQ(stats.quantized_activations, 3);
  EXPECT_EQ(stats.float_ops, 2);  // Sigmoid and Mul
}

// Exporters share one initializer between nodes through Identity (EfficientNet's all-zero
// Conv biases): at fusion level none nothing removed those Identity nodes, the bias stayed float
// and onnxruntime ran the Conv in float. Both Convs now read an int32 bias through
// DequantizeLinear, equal to round(b / (scale_x * scale_w)) per channel, and the Identity
// chain (two deep for the second Conv) is gone.
TEST(QdqConverterTest, WeightsAndBiasesReadThroughIdentityAreQuantized) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 4, 4});
  ir::Value* shared = b.Floats("bias", {2}, {0.25f, -0.5f});
  ir::Value* id1 = b.Op("Identity", {shared}, "bias_1", {2});
  ir::Value* id2 = b.Op("Identity", {b.Op("Identity", {shared}, "bias_2a", {2})}, "bias_2", {2});
  ir::Value* w = b.Floats("w", {2, 2, 1, 1}, {1.f, 0.5f, -0.25f, 2.f});
  ir::Value* c1 = b.Op("Conv", {x, b.Op("Identity", {w}, "w_1", {2, 2, 1, 1}), id1}, "c1", {1, 2, 4, 4});
  b.Output(b.Op("Conv", {c1, b.Floats("w2", {2, 2, 1, 1}, {1.f, 0.f, 0.f, 1.f}), id2}, "y", {1, 2, 4, 4}));
  calib::CalibrationTable table;
  table.tensors = {{"c1", 4.f, 4.f / 127, -4.f, 4.f}, {"x", 2.f, 2.f / 127, -2.f, 2.f}, {"y", 4.f, 4.f / 127, -4.f, 4.f}};
  QFUSE_ASSERT_OK_AND_ASSIGN(ConversionStats stats, ConvertToQdq(&b.model(), table, {}));
  EXPECT_EQ(stats.quantized_weights, 2);
  EXPECT_EQ(OpCounts(b.graph()).count("Identity"), 0u);
  // Per-channel weight scales: max |w| of each output channel / 127.
  const std::map<std::string, std::pair<float, std::vector<float>>> expected = {
      {"Conv_c1", {2.f / 127, {1.f / 127, 2.f / 127}}}, {"Conv_y", {4.f / 127, {1.f / 127, 1.f / 127}}}};
  for (const ir::Node* n : b.graph().nodes()) {
    if (n->op_type() != "Conv") continue;
    SCOPED_TRACE(n->name());
    const auto& [x_scale, w_scales] = expected.at(n->name());
    const ir::Node* wdq = n->input(ir::kUnitW)->producer();
    ASSERT_NE(wdq, nullptr);
    EXPECT_EQ(wdq->op_type(), "DequantizeLinear");
    const ir::Node* bdq = n->input(ir::kUnitBias)->producer();
    ASSERT_NE(bdq, nullptr);
    ASSERT_EQ(bdq->op_type(), "DequantizeLinear");
    ASSERT_EQ(bdq->input(0)->initializer()->dtype(), ir::DataType::kInt32);
    const auto q = bdq->input(0)->initializer()->values<int32_t>();
    const float bias[] = {0.25f, -0.5f};
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(q[c], static_cast<int32_t>(std::nearbyint(bias[c] / (x_scale * w_scales[c])))) << "channel " << c;
    }
  }
}

// A DenseNet dense layer: Concat(features) -> BatchNormalization -> Relu -> Conv, where the
// features come from Convs. The Concat has only a float reader (BN) and the Relu a float
// producer (BN), so both run float: each feature map is quantized once, where its Conv writes
// it, and the BN output is quantized after the Relu, not before it (half its levels would go to
// values the Relu zeroes). A Concat read by a Conv and a Relu after a Conv keep their int8 form.
TEST(QdqConverterTest, PassThroughOpsRunFloatNextToFloatOps) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 4, 4});
  ir::Value* f1 = b.Op("Conv", {x, b.Random("w1", {2, 2, 1, 1})}, "f1", {1, 2, 4, 4});
  ir::Value* f2 = b.Op("Conv", {f1, b.Random("w2", {2, 2, 1, 1})}, "f2", {1, 2, 4, 4});
  ir::AttributeMap axis1;
  axis1.Set("axis", int64_t{1});
  ir::Value* cat = b.Op("Concat", {f1, f2}, "cat", {1, 4, 4, 4}, axis1);
  ir::Value* bn = b.BatchNorm(cat, 4, "bn", {1, 4, 4, 4});
  ir::Value* relu = b.Op("Relu", {bn}, "relu", {1, 4, 4, 4});
  ir::Value* f3 = b.Op("Conv", {relu, b.Random("w3", {2, 4, 1, 1})}, "f3", {1, 2, 4, 4});
  ir::Value* relu3 = b.Op("Relu", {f3}, "relu3", {1, 2, 4, 4});
  ir::Value* cat2 = b.Op("Concat", {relu3, f2}, "cat2", {1, 4, 4, 4}, axis1);
  b.Output(b.Op("Conv", {cat2, b.Random("w4", {2, 4, 1, 1})}, "y", {1, 2, 4, 4}));
  calib::CalibrationTable table;
  for (const char* name : {"bn", "cat", "cat2", "f1", "f2", "f3", "relu", "relu3", "x", "y"}) {
    table.tensors.push_back({name, 2.f, 2.f / 127, -2.f, 2.f});
  }
  QFUSE_ASSERT_OK_AND_ASSIGN(ConversionStats stats, ConvertToQdq(&b.model(), table, {}));
  std::set<std::string> quantized;
  std::map<std::string, std::string> reads;  // node -> op of the producer of its input 0
  for (const ir::Node* n : b.graph().nodes()) {
    if (n->op_type() == "QuantizeLinear") quantized.insert(n->input(0)->name());
    if (n->input(0) != nullptr && n->input(0)->producer() != nullptr) {
      reads[n->name()] = n->input(0)->producer()->op_type();
    }
  }
  EXPECT_EQ(quantized, (std::set<std::string>{"x", "f1", "f2", "relu", "f3", "relu3", "cat2"}));
  EXPECT_EQ(reads.at("Concat_cat"), "DequantizeLinear");        // reads quantized f1, f2 ...
  EXPECT_EQ(reads.at("BatchNormalization_bn"), "Concat");       // ... and concatenates in float
  EXPECT_EQ(reads.at("Relu_relu"), "BatchNormalization");       // no Q/DQ before the clamp
  EXPECT_EQ(reads.at("Relu_relu3"), "DequantizeLinear");        // int8 Relu after an int8 Conv
  EXPECT_EQ(stats.float_ops, 3);                                // Concat cat, BN, Relu relu
  EXPECT_EQ(stats.quantized_activations, 7);
}

// Average pools take their input's scale (PyTorch's convention), widened by 2^-8 so that no
// mean lands exactly on a rounding tie: a mean never leaves its inputs' range, so it never
// clips where the input did not. A threshold
// calibrated on the pooled values themselves is far tighter and clipped held-out images whose
// features exceed the calibration set's (DenseNet-121's classifier input: calibrated 2.9,
// evaluation up to 12.8; output SQNR 10.1 dB, 15.6 dB with the shared scale).
TEST(QdqConverterTest, AveragePoolsTakeTheirInputScale) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 4, 4});
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {2, 2, 1, 1})}, "c", {1, 2, 4, 4});
  ir::Value* relu = b.Op("Relu", {c}, "relu", {1, 2, 4, 4});
  ir::Value* gap = b.Op("GlobalAveragePool", {relu}, "gap", {1, 2, 1, 1});
  ir::Value* flat = b.Op("Flatten", {gap}, "flat", {1, 2});
  b.Output(b.Op("Gemm", {flat, b.Random("fc", {2, 2})}, "y", {1, 2}));
  calib::CalibrationTable table;
  table.tensors = {{"c", 4.f, 4.f / 127, -4.f, 4.f}, {"flat", .5f, .5f / 127, 0.f, .5f},
                   {"gap", .5f, .5f / 127, 0.f, .5f}, {"relu", 4.f, 4.f / 127, 0.f, 4.f},
                   {"x", 2.f, 2.f / 127, -2.f, 2.f},   {"y", 2.f, 2.f / 127, -2.f, 2.f}};
  QFUSE_ASSERT_OK(ConvertToQdq(&b.model(), table, {}).status());
  const std::map<std::string, float> scale = QuantizedScales(b.graph());
  ASSERT_EQ(scale.count("gap"), 1u);
  EXPECT_EQ(scale.at("relu"), 4.f / 127);
  EXPECT_EQ(scale.at("gap"), scale.at("relu") * (1.f + 1.f / 256));  // no exact rounding ties
  EXPECT_EQ(scale.at("flat"), scale.at("gap"));  // Flatten keeps it
}

// A Concat whose inputs it alone reads gives them its own range, so it only moves bytes and
// each branch rounds once (PyTorch FX shares one observer across a cat, TensorRT one scale);
// when one input also has another reader, every input keeps its own range and the Concat
// requantizes. Scales hand-computed from the table (symmetric int8: threshold / 127).
TEST(QdqConverterTest, ConcatInputsReadOnlyByItTakeItsRange) {
  for (bool other_reader : {false, true}) {
    testing::GraphBuilder b;
    ir::Value* x = b.Input("x", {1, 2, 4, 4});
    ir::Value* a = b.Op("Conv", {x, b.Random("wa", {2, 2, 1, 1})}, "a", {1, 2, 4, 4});
    ir::Value* ra = b.Op("Relu", {a}, "ra", {1, 2, 4, 4});
    ir::Value* c = b.Op("Conv", {x, b.Random("wc", {2, 2, 3, 3})}, "c", {1, 2, 4, 4});
    ir::Value* rc = b.Op("Relu", {c}, "rc", {1, 2, 4, 4});
    ir::AttributeMap axis1;
    axis1.Set("axis", int64_t{1});
    ir::Value* cat = b.Op("Concat", {ra, rc}, "cat", {1, 4, 4, 4}, axis1);
    b.Output(b.Op("Conv", {cat, b.Random("wy", {2, 4, 1, 1})}, "y", {1, 2, 4, 4}));
    if (other_reader) b.Output(b.Op("Conv", {rc, b.Random("wz", {2, 2, 1, 1})}, "z", {1, 2, 4, 4}));
    calib::CalibrationTable table;
    table.tensors = {{"a", 1.f, 1.f / 127, -1.f, 1.f},   {"c", 3.f, 3.f / 127, -3.f, 3.f},
                     {"cat", 2.f, 2.f / 127, 0.f, 3.f},  {"ra", 1.f, 1.f / 127, 0.f, 1.f},
                     {"rc", 3.f, 3.f / 127, 0.f, 3.f},   {"x", 2.f, 2.f / 127, -2.f, 2.f},
                     {"y", 2.f, 2.f / 127, -2.f, 2.f},   {"z", 2.f, 2.f / 127, -2.f, 2.f}};
    QFUSE_ASSERT_OK(ConvertToQdq(&b.model(), table, {}).status());
    const std::map<std::string, float> scale = QuantizedScales(b.graph());
    ASSERT_EQ(scale.count("ra"), 1u);
    ASSERT_EQ(scale.count("rc"), 1u);
    ASSERT_EQ(scale.count("cat"), 1u);
    EXPECT_EQ(scale.at("cat"), 2.f / 127) << other_reader;
    EXPECT_EQ(scale.at("ra"), other_reader ? 1.f / 127 : 2.f / 127);
    EXPECT_EQ(scale.at("rc"), other_reader ? 3.f / 127 : 2.f / 127);
  }
}

// A graph input keeps the range calibrated on it: a Concat of a graph input and a unit's output
// shares nothing, each input keeps its own range (hand-computed, threshold / 127).
TEST(QdqConverterTest, ConcatOfAGraphInputSharesNoRange) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 4, 4});
  ir::Value* side = b.Input("side", {1, 2, 4, 4});
  ir::Value* ra = b.Op("Relu", {b.Op("Conv", {x, b.Random("wa", {2, 2, 1, 1})}, "a", {1, 2, 4, 4})}, "ra", {1, 2, 4, 4});
  ir::AttributeMap axis1;
  axis1.Set("axis", int64_t{1});
  ir::Value* cat = b.Op("Concat", {ra, side}, "cat", {1, 4, 4, 4}, axis1);
  b.Output(b.Op("Conv", {cat, b.Random("wy", {2, 4, 1, 1})}, "y", {1, 2, 4, 4}));
  calib::CalibrationTable table;
  table.tensors = {{"a", 3.f, 3.f / 127, -3.f, 3.f},   {"cat", 2.f, 2.f / 127, -1.f, 3.f},
                   {"ra", 3.f, 3.f / 127, 0.f, 3.f},   {"side", 1.f, 1.f / 127, -1.f, 1.f},
                   {"x", 2.f, 2.f / 127, -2.f, 2.f},   {"y", 2.f, 2.f / 127, -2.f, 2.f}};
  QFUSE_ASSERT_OK(ConvertToQdq(&b.model(), table, {}).status());
  const std::map<std::string, float> scale = QuantizedScales(b.graph());
  for (const char* v : {"ra", "side", "cat"}) ASSERT_EQ(scale.count(v), 1u) << v;
  EXPECT_EQ(scale.at("side"), 1.f / 127);
  EXPECT_EQ(scale.at("ra"), 3.f / 127);
  EXPECT_EQ(scale.at("cat"), 2.f / 127);
}

// A MaxPool's input keeps its own range and the MaxPool moves bytes (the pooled values' own
// threshold was measured and lost on a trained ResNet-18: quant/shared_ranges.h); a Concat
// before a MaxPool still gives its branches its range when it alone reads them. Symmetric int8
// (threshold / 127) and target qfuse's uint8 grids (threshold / 255, zero point 0),
// hand-computed from the table.
TEST(QdqConverterTest, MaxPoolsMoveTheirInputsBytes) {
  for (bool target_defaults : {false, true}) {
    for (bool other_reader : {false, true}) {
      testing::GraphBuilder b;
      ir::Value* x = b.Input("x", {1, 2, 4, 4});
      ir::AttributeMap window;
      window.Set("kernel_shape", std::vector<int64_t>{2, 2});
      window.Set("strides", std::vector<int64_t>{2, 2});
      ir::AttributeMap axis1;
      axis1.Set("axis", int64_t{1});
      ir::Value* r = b.Op("Relu", {b.Op("Conv", {x, b.Random("w", {2, 2, 1, 1})}, "c", {1, 2, 4, 4})}, "r", {1, 2, 4, 4});
      ir::Value* p = b.Op("MaxPool", {r}, "p", {1, 2, 2, 2}, window);
      b.Output(b.Op("Conv", {p, b.Random("wy", {2, 2, 1, 1})}, "y", {1, 2, 2, 2}));
      ir::Value* ra = b.Op("Relu", {b.Op("Conv", {x, b.Random("wa", {2, 2, 1, 1})}, "a", {1, 2, 4, 4})}, "ra", {1, 2, 4, 4});
      ir::Value* rb = b.Op("Relu", {b.Op("Conv", {x, b.Random("wb", {2, 2, 1, 1})}, "bb", {1, 2, 4, 4})}, "rb", {1, 2, 4, 4});
      ir::Value* cat = b.Op("Concat", {ra, rb}, "cat", {1, 4, 4, 4}, axis1);
      ir::Value* q = b.Op("MaxPool", {cat}, "q", {1, 4, 2, 2}, window);
      b.Output(b.Op("Conv", {q, b.Random("wz", {2, 4, 1, 1})}, "z", {1, 2, 2, 2}));
      if (other_reader) {
        b.Output(b.Op("Conv", {r, b.Random("wr", {2, 2, 1, 1})}, "yr", {1, 2, 4, 4}));
        b.Output(b.Op("Conv", {rb, b.Random("wrb", {2, 2, 1, 1})}, "zb", {1, 2, 4, 4}));
      }
      calib::CalibrationTable table;
      table.tensors = {{"a", 1.f, 1.f / 127, -1.f, 1.f},  {"bb", 1.f, 1.f / 127, -1.f, 1.f},
                       {"c", 4.f, 4.f / 127, -4.f, 5.f},  {"cat", 2.f, 2.f / 127, 0.f, 3.f},
                       {"p", 6.f, 6.f / 127, 0.f, 7.f},   {"q", 3.f, 3.f / 127, 0.f, 3.f},
                       {"r", 4.f, 4.f / 127, 0.f, 7.f},   {"ra", 1.f, 1.f / 127, 0.f, 1.f},
                       {"rb", 1.5f, 1.5f / 127, 0.f, 3.f}, {"x", 2.f, 2.f / 127, -2.f, 2.f},
                       {"y", 2.f, 2.f / 127, -2.f, 2.f},  {"yr", 2.f, 2.f / 127, -2.f, 2.f},
                       {"z", 2.f, 2.f / 127, -2.f, 2.f},  {"zb", 2.f, 2.f / 127, -2.f, 2.f}};
      ConvertOptions options;
      if (target_defaults) {
        options = WithTargetDefaults(options, UserChoices());
        ASSERT_TRUE(options.int8_as_uint8 && options.unsigned_non_negative);
      }
      const float levels = target_defaults ? 255.f : 127.f;
      QFUSE_ASSERT_OK(ConvertToQdq(&b.model(), table, options).status());
      const std::map<std::string, float> scale = QuantizedScales(b.graph());
      for (const char* v : {"r", "p", "ra", "rb", "cat", "q"}) ASSERT_EQ(scale.count(v), 1u) << v;
      EXPECT_EQ(scale.at("r"), 4.f / levels) << other_reader;
      EXPECT_EQ(scale.at("p"), scale.at("r"));  // the MaxPool moves bytes
      EXPECT_EQ(scale.at("cat"), 2.f / levels);
      EXPECT_EQ(scale.at("ra"), (other_reader ? 1.f : 2.f) / levels);
      EXPECT_EQ(scale.at("rb"), (other_reader ? 1.5f : 2.f) / levels);
      EXPECT_EQ(scale.at("q"), scale.at("cat"));
    }
  }
}

// Under target qfuse's defaults (uint8 storage, grids from the lower bounds) the Concat's range
// is shared only where every input has the Concat's kind of grid: two Relu branches take the
// Concat's [0, T] grid; a Relu and a HardSwish branch (bounded below by 0 and -0.376) keep their
// own. Target onnxruntime shares none (its Relu / Clip fusion needs each branch's own grid).
// Hand-computed from the table.
TEST(QdqConverterTest, ConcatRangeSharingKeepsEachInputsKindOfGrid) {
  for (DeployTarget target : {DeployTarget::kQfuse, DeployTarget::kOnnxRuntime}) {
    testing::GraphBuilder b;
    ir::Value* x = b.Input("x", {1, 2, 4, 4});
    ir::AttributeMap axis1;
    axis1.Set("axis", int64_t{1});
    auto branch = [&](const char* conv, const char* act, const char* name) {
      ir::Value* c = b.Op("Conv", {x, b.Random(std::string("w_") + name, {2, 2, 1, 1})}, conv, {1, 2, 4, 4});
      return b.Op(act, {c}, name, {1, 2, 4, 4});
    };
    ir::Value* cat1 = b.Op("Concat", {branch("a", "Relu", "ra"), branch("c", "Relu", "rc")}, "cat1", {1, 4, 4, 4}, axis1);
    ir::Value* cat2 =
        b.Op("Concat", {branch("d", "Relu", "rd"), branch("e", "HardSwish", "he")}, "cat2", {1, 4, 4, 4}, axis1);
    b.Output(b.Op("Conv", {cat1, b.Random("wy1", {2, 4, 1, 1})}, "y1", {1, 2, 4, 4}));
    b.Output(b.Op("Conv", {cat2, b.Random("wy2", {2, 4, 1, 1})}, "y2", {1, 2, 4, 4}));
    calib::CalibrationTable table;
    table.tensors = {{"cat1", 2.f, 2.f / 127, 0.f, 3.f},     {"cat2", 2.f, 2.f / 127, -0.37f, 3.f},
                     {"he", 3.f, 3.f / 127, -0.37f, 3.f},    {"ra", 1.f, 1.f / 127, 0.f, 1.f},
                     {"rc", 3.f, 3.f / 127, 0.f, 3.f},       {"rd", 1.f, 1.f / 127, 0.f, 1.f},
                     {"x", 2.f, 2.f / 127, -2.f, 2.f},       {"y1", 2.f, 2.f / 127, -2.f, 2.f},
                     {"y2", 2.f, 2.f / 127, -2.f, 2.f}};
    ConvertOptions options;
    options.target = target;
    options = WithTargetDefaults(options, UserChoices());
    const bool shared = target == DeployTarget::kQfuse;
    // qfuse: int8 stored as uint8, grids from the lower bounds; onnxruntime: uint8 activations,
    // zero point 0 where the calibration saw no negative value, else T / 127 around 128.
    ASSERT_EQ(options.int8_as_uint8 && options.unsigned_non_negative, shared);
    QFUSE_ASSERT_OK(fusion::Fuse(&b.model(), fusion::FusionLevel::kFull).status());
    QFUSE_ASSERT_OK(ConvertToQdq(&b.model(), table, options).status());
    const std::map<std::string, std::pair<float, int>> grid = QuantizedUint8Grids(b.graph());
    for (const char* v : {"ra", "rc", "rd", "he", "cat1"}) ASSERT_EQ(grid.count(v), 1u) << v;
    EXPECT_EQ(grid.at("cat1"), std::make_pair(2.f / 255, 0));
    EXPECT_EQ(grid.at("ra"), std::make_pair(shared ? 2.f / 255 : 1.f / 255, 0));
    EXPECT_EQ(grid.at("rc"), std::make_pair(shared ? 2.f / 255 : 3.f / 255, 0));
    EXPECT_EQ(grid.at("rd"), std::make_pair(1.f / 255, 0));
    if (shared) {
      EXPECT_FLOAT_EQ(grid.at("he").first, (3.f + 0.376f) / 255);
      EXPECT_EQ(grid.at("he").second, 28);  // round(0.376 / 0.0132392)
    } else {
      EXPECT_EQ(grid.at("he"), std::make_pair(3.f / 127, 128));
    }
  }
}

// Target qfuse's grids: a HardSwish output (>= -0.376 by construction) gets [max(-0.376, -T), T]
// on 256 levels, a Relu output [0, T] (zero point 0, T / 255), the graph input the symmetric
// grid (zero point 128, the table's T / 127); with --bounded_below=false the HardSwish output
// is symmetric too. Hand-computed from the table's thresholds.
TEST(QdqConverterTest, TargetQfuseGridsFollowTheLowerBounds) {
  for (bool bounded_below : {true, false}) {
    testing::GraphBuilder b;
    ir::Value* x = b.Input("x", {1, 2, 4, 4});
    ir::Value* c = b.Op("Conv", {x, b.Random("w", {2, 2, 1, 1})}, "c", {1, 2, 4, 4});
    ir::Value* hswish = b.Op("HardSwish", {c}, "hswish", {1, 2, 4, 4});
    ir::Value* c2 = b.Op("Conv", {hswish, b.Random("w2", {2, 2, 1, 1})}, "c2", {1, 2, 4, 4});
    ir::Value* relu = b.Op("Relu", {c2}, "relu", {1, 2, 4, 4});
    b.Output(b.Op("Conv", {relu, b.Random("w3", {2, 2, 1, 1})}, "y", {1, 2, 4, 4}));
    calib::CalibrationTable table;
    table.tensors = {{"hswish", 3.f, 3.f / 127, -0.37f, 3.f}, {"relu", 4.f, 4.f / 127, 0.f, 4.f},
                     {"x", 2.f, 2.f / 127, -2.f, 2.f}, {"y", 2.f, 2.f / 127, -2.f, 2.f}};
    ConvertOptions options;
    UserChoices chosen;
    options.bounded_below = bounded_below;
    chosen.bounded_below = true;
    options = WithTargetDefaults(options, chosen);
    ASSERT_TRUE(options.int8_as_uint8 && options.unsigned_non_negative);
    QFUSE_ASSERT_OK(fusion::Fuse(&b.model(), fusion::FusionLevel::kFull).status());
    QFUSE_ASSERT_OK_AND_ASSIGN(ConversionStats stats, ConvertToQdq(&b.model(), table, options));
    const std::map<std::string, std::pair<float, int>> grid = QuantizedUint8Grids(b.graph());
    ASSERT_EQ(grid.count("hswish"), 1u);
    ASSERT_EQ(grid.count("relu"), 1u);
    EXPECT_EQ(grid.at("x"), std::make_pair(2.f / 127, 128));
    EXPECT_EQ(grid.at("relu"), std::make_pair(4.f / 255, 0));
    if (bounded_below) {
      const float scale = (3.f + 0.376f) / 255;  // 0.0132392...
      EXPECT_FLOAT_EQ(grid.at("hswish").first, scale);
      EXPECT_EQ(grid.at("hswish").second, 28);  // round(0.376 / 0.0132392) = round(28.40)
      EXPECT_EQ(stats.unsigned_activations, 2);
    } else {
      EXPECT_EQ(grid.at("hswish"), std::make_pair(3.f / 127, 128));
      EXPECT_EQ(stats.unsigned_activations, 1);
    }
  }
}

// An opset-9 export computes Upsample scales at run time: Cast(Shape) -> Div -> Concat. Those
// FLOAT values are shape arithmetic, not activations: quantizing them to int8 turned a scale of
// 2 into 1.875 and a 16x16 map into 15x15 (LR-ASPP at opset 9). They stay float. The Shape
// itself reads the quantized tensor, whose dims are the same (in the integer runtime, stored
// channels-last: the Resize must still get [1, 2, 8, 8]).
TEST(QdqConverterTest, ShapeArithmeticStaysFloat) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 4, 4});
  ir::Value* c = b.Op("Conv", {x, b.Random("w", {2, 2, 1, 1})}, "c", {1, 2, 4, 4});
  ir::Value* shape = b.Op("Shape", {c}, "shape", {4});
  shape->mutable_type().dtype = ir::DataType::kInt64;
  ir::AttributeMap to_float;
  to_float.Set("to", int64_t{1});
  ir::Value* sizes = b.Op("Cast", {shape}, "sizes", {4}, to_float);
  ir::Value* scales = b.Op("Div", {b.Floats("target", {4}, {1, 2, 8, 8}), sizes}, "scales", {4});
  ir::Value* up = b.Op("Resize", {c, nullptr, scales}, "up", {1, 2, 8, 8});
  b.Output(b.Op("Conv", {up, b.Random("w2", {2, 2, 1, 1})}, "y", {1, 2, 8, 8}));
  calib::CalibrationTable table;
  for (const char* name : {"c", "scales", "sizes", "up", "x", "y"}) table.tensors.push_back({name, 2.f, 2.f / 127, -2.f, 2.f});
  std::sort(table.tensors.begin(), table.tensors.end(),
            [](const calib::TensorRange& a, const calib::TensorRange& t) { return a.name < t.name; });
  QFUSE_ASSERT_OK_AND_ASSIGN(ConversionStats stats, ConvertToQdq(&b.model(), table, {}));
  std::set<std::string> quantized;
  for (const ir::Node* n : b.graph().nodes()) {
    if (n->op_type() == "QuantizeLinear") quantized.insert(n->input(0)->name());
  }
  EXPECT_EQ(quantized, (std::set<std::string>{"x", "c", "up"}));
  // The Shape reads c's QuantizeLinear output, so c's only reader is its QuantizeLinear (the
  // Conv's group stays one that onnxruntime fuses and qfuse lowers to an integer unit).
  const ir::Value* c_value = b.graph().FindValue("c");
  ASSERT_EQ(c_value->uses().size(), 1u);
  EXPECT_EQ(c_value->uses()[0].node->op_type(), "QuantizeLinear");
  EXPECT_EQ(shape->producer()->input(0), c_value->uses()[0].node->output(0));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, runtime::Executor::Create(b.graph()));
  int units = 0;
  for (const ir::Node* n : exec->graph().nodes()) units += n->op_type() == "QLinearUnit";
  EXPECT_EQ(units, 2);
  ir::Tensor input(ir::DataType::kFloat32, {1, 2, 4, 4});
  for (float& v : input.mutable_values<float>()) v = 0.5f;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto out, exec->Run({{"x", input}}));
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{1, 2, 8, 8}));
}

// A Softmax output's scale is T / 255 moved to the float just at or below 1/M (M whole) whose
// float32 reciprocal floors to M, for onnxruntime's QLinearSoftmax (floor(1 / y_scale)); other
// tensors keep the table's scale. Hand-computed: T = 1 gives 1/255 in float32, whose reciprocal
// floors to 254; one ulp below it floors to 255.
TEST(QdqConverterTest, SoftmaxOutputScalesHaveWholeReciprocals) {
  for (DeployTarget target : {DeployTarget::kQfuse, DeployTarget::kOnnxRuntime}) {
    testing::GraphBuilder b;
    ir::Value* x = b.Input("x", {2, 8});
    ir::Value* m = b.Op("MatMul", {x, b.Random("w", {8, 8})}, "m", {2, 8});
    ir::Value* p = b.Op("Softmax", {m}, "p", {2, 8});
    b.Output(b.Op("MatMul", {p, b.Random("w2", {8, 4})}, "y", {2, 4}));
    calib::CalibrationTable table;
    table.tensors = {{"m", 2.f, 2.f / 127, -2.f, 2.f},
                     {"p", 1.f, 1.f / 127, 0.f, 1.f},
                     {"x", 2.f, 2.f / 127, -2.f, 2.f},
                     {"y", 2.f, 2.f / 127, -2.f, 2.f}};
    ConvertOptions options;
    options.target = target;
    options = WithTargetDefaults(options, UserChoices());
    QFUSE_ASSERT_OK(ConvertToQdq(&b.model(), table, options).status());
    const std::map<std::string, float> scale = QuantizedScales(b.graph());
    ASSERT_EQ(scale.count("p"), 1u);
    EXPECT_EQ(scale.at("p"), std::nextafter(1.f / 255, 0.f));
    EXPECT_EQ(std::floor(1.f / scale.at("p")), 255.f);
    EXPECT_EQ(scale.at("m"), 2.f / 127);
  }
}

}  // namespace
}  // namespace qfuse::quant
