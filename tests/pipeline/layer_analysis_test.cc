// The per-layer analysis against its definition, on the bundled samples and Fashion-MNIST
// images: a layer's isolated figures are those of the whole float graph with only that layer
// quantized, run end to end here (the analysis runs only the part that computes the layer),
// its accumulated figures those of the whole Q/DQ graph, and its fallback gain that of the
// whole Q/DQ graph with only that layer float (the analysis runs only what the layer changes);
// bit for bit.
#include "pipeline/layer_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "data/dataset.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "pipeline/evaluation.h"
#include "runtime/executor.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::pipeline {
namespace {

using ValueMap = std::map<std::string, ir::Tensor>;

// Every FLOAT value of one run of `graph`, each node as written.
absl::StatusOr<ValueMap> RunAll(const ir::Graph& graph, const std::vector<ir::NamedTensor>& inputs,
                                runtime::ExecutorOptions options) {
  options.fuse_float_chains = false;
  QFUSE_ASSIGN_OR_RETURN(auto exec, runtime::Executor::Create(graph, options));
  ValueMap values;
  runtime::RunOptions run;
  run.observer = [&](const ir::Value& v, const ir::Tensor& t) {
    if (t.dtype() == ir::DataType::kFloat32) values[v.name()] = t;
  };
  QFUSE_ASSIGN_OR_RETURN(auto outputs, exec->Run(inputs, run));
  for (auto& out : outputs) values[out.name] = std::move(out.tensor);
  return values;
}

// One batch for input "x", uniform in [0, 1).
std::vector<ir::NamedTensor> UniformBatch(const std::vector<int64_t>& dims, unsigned seed) {
  ir::Tensor input(ir::DataType::kFloat32, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (float& v : input.mutable_values<float>()) v = u(rng);
  return {{"x", input}};
}

// The analysis with Q/DQ simulated in float and a one-layer keep-float suggestion.
LayerAnalysisOptions SuggestOne() {
  LayerAnalysisOptions options;
  options.executor.integer_kernels = false;
  options.suggest_keep_float = 1;
  return options;
}

// Thresholds at each value's max in `reference` (all positive here); `names` sorted, as the
// table looks them up.
calib::CalibrationTable MaxTable(const ValueMap& reference, const std::vector<std::string>& names) {
  calib::CalibrationTable table;
  for (const std::string& name : names) {
    const auto v = reference.at(name).values<float>();
    const float max = *std::max_element(v.begin(), v.end());
    table.tensors.push_back({name, max, max / 127, 0.f, max, "max", ""});
  }
  return table;
}

void ExpectAnalysisMatchesWholeGraphRuns(const std::string& name, fusion::FusionLevel level) {
  SCOPED_TRACE(name + " at " + std::string(fusion::FusionLevelName(level)));
  const quant::ConvertOptions convert;
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::QuantizedSample run,
                             testing::CalibrateSample(name, level, calib::ThresholdOptions(), convert, 16));
  const ir::Model& fused = run.model;
  data::DataSource source;  // the first calibration images
  source.path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, data::OpenDataset({source}, *fused.graph, 3));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> batch, data->ReadBatch(0, 3));
  LayerAnalysisOptions options;
  options.executor.integer_kernels = false;
  options.suggest_keep_float = 2;
  QFUSE_ASSERT_OK_AND_ASSIGN(LayerAnalysis analysis, AnalyzeLayers(fused, run.table, convert, batch, options));
  ASSERT_GE(analysis.layers.size(), 10u);

  QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap reference, RunAll(*fused.graph, batch, options.executor));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model all_int8, QuantizedCopy(fused, run.table, convert));
  QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap accumulated, RunAll(*all_int8.graph, batch, options.executor));
  // The layers as the analysis defines them: every node with a FLOAT output.
  quant::ConvertOptions all_float = convert;
  for (const ir::Node* n : fused.graph->nodes()) {
    if (n->output(0) != nullptr && n->output(0)->type().dtype == ir::DataType::kFloat32) {
      all_float.keep_float.insert(n->name());
    }
  }
  const ir::Value* output = fused.graph->outputs().at(0);
  const auto ref_output = reference.at(output->name()).values<float>();
  const double int8_sqnr = SqnrDb(ref_output, accumulated.at(output->name()).values<float>());
  int quantized_alone = 0;
  int fallback_helps = 0;
  for (const LayerError& e : analysis.layers) {
    SCOPED_TRACE(e.node);
    quant::ConvertOptions only = all_float;
    ASSERT_EQ(only.keep_float.erase(e.node), 1u);
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model isolated_model, QuantizedCopy(fused, run.table, only));
    QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap isolated, RunAll(*isolated_model.graph, batch, options.executor));
    const auto ref = reference.at(e.output).values<float>();
    EXPECT_EQ(SqnrDb(ref, isolated.at(e.output).values<float>()), e.sqnr_isolated);
    EXPECT_EQ(Cosine(ref, isolated.at(e.output).values<float>()), e.cosine_isolated);
    EXPECT_EQ(SqnrDb(ref, accumulated.at(e.output).values<float>()), e.sqnr_accumulated);
    quantized_alone += e.sqnr_isolated < 200;  // a layer that quantization touches on its own
    // Fallback: this layer alone float, the rest int8, run whole (the analysis runs only what
    // the layer changes, from the all-int8 run's 8-bit values).
    quant::ConvertOptions fallback = convert;
    fallback.keep_float.insert(e.node);
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model fallback_model, QuantizedCopy(fused, run.table, fallback));
    QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap fallback_values, RunAll(*fallback_model.graph, batch, options.executor));
    EXPECT_EQ(e.fallback_gain_db, SqnrDb(ref_output, fallback_values.at(output->name()).values<float>()) - int8_sqnr);
    fallback_helps += e.fallback_gain_db > 0;
  }
  EXPECT_GE(quantized_alone, 5);
  EXPECT_GE(fallback_helps, 1);
  // The fallbacks ran only what each layer changes: well under the whole graphs.
  EXPECT_GT(analysis.fallback_nodes_run, 0);
  EXPECT_LT(analysis.fallback_nodes_run, analysis.fallback_nodes * 3 / 4);
  // The suggested set's figure: the whole graph with those layers float.
  ASSERT_FALSE(analysis.suggested_keep_float.empty());
  quant::ConvertOptions suggested = convert;
  suggested.keep_float.insert(analysis.suggested_keep_float.begin(), analysis.suggested_keep_float.end());
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model suggested_model, QuantizedCopy(fused, run.table, suggested));
  QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap with_suggestion, RunAll(*suggested_model.graph, batch, options.executor));
  EXPECT_EQ(analysis.output_sqnr_with_suggestion_db,
            SqnrDb(ref_output, with_suggestion.at(output->name()).values<float>()));
}

TEST(LayerAnalysisTest, FiguresAreThoseOfWholeGraphRuns) {
  for (const char* model : {"resnet_small", "mobilenetv2_small", "vgg_normalized"}) {
    for (const fusion::FusionLevel level : {fusion::FusionLevel::kFull, fusion::FusionLevel::kNone}) {
      ExpectAnalysisMatchesWholeGraphRuns(model, level);
    }
  }
}

// Integer graph outputs have no SQNR: the output figures are the FLOAT output's alone. Here a
// Cast to INT32 of the output holds small non-negative integers (0 to 14), whose bits read as
// float are denormals in proportion to them; int8 error moves 21 of its 512 values across an
// integer, an SQNR of those integers (31.2 dB) far below the float output's (49.0 dB), which
// the analysis took as the worst output SQNR when it read every output as float.
TEST(LayerAnalysisTest, OutputSqnrIsTheFloatOutputsAlone) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {8, 4, 4, 4});
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {4, 4, 1, 1}, 0.5f, 1.5f)}, "c1", {8, 4, 4, 4});
  ir::Value* y = b.Op("Conv", {c1, b.Random("w2", {4, 4, 1, 1}, 0.5f, 1.5f)}, "y", {8, 4, 4, 4});
  ir::Value* as_int = b.Op("Cast", {y}, "y_int32", {8, 4, 4, 4}, b.Attrs({{"to", int64_t{6}}}));  // INT32
  as_int->mutable_type().dtype = ir::DataType::kInt32;
  b.Output(y);
  b.Output(as_int);
  const std::vector<ir::NamedTensor> batch = UniformBatch({8, 4, 4, 4}, 3);
  const LayerAnalysisOptions options = SuggestOne();
  QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap reference, RunAll(b.graph(), batch, options.executor));
  reference["x"] = batch[0].tensor;  // a run does not show its graph inputs
  const calib::CalibrationTable table = MaxTable(reference, {"c1", "x", "y"});
  const quant::ConvertOptions convert;
  QFUSE_ASSERT_OK_AND_ASSIGN(LayerAnalysis analysis, AnalyzeLayers(b.model(), table, convert, batch, options));

  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model all_int8, QuantizedCopy(b.model(), table, convert));
  QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap int8, RunAll(*all_int8.graph, batch, options.executor));
  const auto ref_ints = reference.at("y_int32").values<int32_t>();
  const auto int8_ints = int8.at("y_int32").values<int32_t>();
  ASSERT_FALSE(std::equal(ref_ints.begin(), ref_ints.end(), int8_ints.begin()))
      << "the integer output must differ between the runs for this test to see it";
  const double float_sqnr = SqnrDb(reference.at("y").values<float>(), int8.at("y").values<float>());
  ASSERT_TRUE(std::isfinite(float_sqnr));
  EXPECT_EQ(analysis.output_sqnr_db, float_sqnr);
  // With the suggested layer kept float: again the float output's SQNR alone.
  ASSERT_EQ(analysis.suggested_keep_float.size(), 1u);
  quant::ConvertOptions suggested = convert;
  suggested.keep_float.insert(analysis.suggested_keep_float[0]);
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model suggested_model, QuantizedCopy(b.model(), table, suggested));
  QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap with_suggestion, RunAll(*suggested_model.graph, batch, options.executor));
  EXPECT_EQ(analysis.output_sqnr_with_suggestion_db,
            SqnrDb(reference.at("y").values<float>(), with_suggestion.at("y").values<float>()));
}

// A node with an omitted optional output (Dropout's mask, "") downstream of a fallback: the
// part copies it with the output still omitted, and the gain is the whole graph's.
TEST(LayerAnalysisTest, FallbackPartsKeepOmittedOutputs) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {8, 4, 4, 4});
  ir::Value* c1 = b.Op("Conv", {x, b.Random("w1", {4, 4, 1, 1}, 0.5f, 1.5f)}, "c1", {8, 4, 4, 4});
  ir::Node* drop = *b.graph().AddNode("Dropout", "drop", {c1}, {"d", ""});
  drop->output(0)->mutable_type() = c1->type();
  ASSERT_EQ(drop->output(1), nullptr);
  ir::Value* y = b.Op("Conv", {drop->output(0), b.Random("w2", {4, 4, 1, 1}, 0.5f, 1.5f)}, "y", {8, 4, 4, 4});
  b.Output(y);
  const std::vector<ir::NamedTensor> batch = UniformBatch({8, 4, 4, 4}, 7);
  const LayerAnalysisOptions options = SuggestOne();
  QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap reference, RunAll(b.graph(), batch, options.executor));
  reference["x"] = batch[0].tensor;
  const calib::CalibrationTable table = MaxTable(reference, {"c1", "d", "x", "y"});
  const quant::ConvertOptions convert;
  QFUSE_ASSERT_OK_AND_ASSIGN(LayerAnalysis analysis, AnalyzeLayers(b.model(), table, convert, batch, options));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model all_int8, QuantizedCopy(b.model(), table, convert));
  QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap int8, RunAll(*all_int8.graph, batch, options.executor));
  const auto ref_y = reference.at("y").values<float>();
  const double int8_sqnr = SqnrDb(ref_y, int8.at("y").values<float>());
  int checked = 0;
  for (const LayerError& e : analysis.layers) {
    SCOPED_TRACE(e.node);
    quant::ConvertOptions fallback = convert;
    fallback.keep_float.insert(e.node);
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model fallback_model, QuantizedCopy(b.model(), table, fallback));
    QFUSE_ASSERT_OK_AND_ASSIGN(ValueMap values, RunAll(*fallback_model.graph, batch, options.executor));
    EXPECT_EQ(e.fallback_gain_db, SqnrDb(ref_y, values.at("y").values<float>()) - int8_sqnr);
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// The analysis needs every value under its name: integer kernels are refused.
TEST(LayerAnalysisTest, IntegerKernelsAreRefused) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 4, 4, 4});
  b.Output(b.Op("Relu", {x}, "y", {1, 4, 4, 4}));
  LayerAnalysisOptions options;
  options.executor.integer_kernels = true;
  const auto analysis = AnalyzeLayers(b.model(), calib::CalibrationTable(), quant::ConvertOptions(),
                                      {{"x", ir::Tensor(ir::DataType::kFloat32, {1, 4, 4, 4})}}, options);
  EXPECT_EQ(analysis.status().code(), absl::StatusCode::kInvalidArgument) << analysis.status();
}

// The greedy choice on hand-made SQNRs: the output error is the sum of the errors of the layers
// left int8, +0.8 from A and from B, -1 from C, +0.5 from D (all int8: 1.1). Alone, A and B
// each leave 0.3 and D 0.6 (all three help) and C 2.1 (not tried). A is kept (0.3); A with B
// leaves -0.5, worse, so B is refused although it helped alone; A with D leaves -0.2: kept.
TEST(ChooseKeepFloatTest, KeepsALayerOnlyIfItHelpsTheSetChosenSoFar) {
  const std::map<std::string, double> error = {{"A", 0.8}, {"B", 0.8}, {"C", -1.0}, {"D", 0.5}};
  int calls = 0;
  const auto sqnr_with = [&](const std::set<std::string>& kept) -> absl::StatusOr<double> {
    ++calls;
    double e = 0;
    for (const auto& [name, v] : error) {
      if (kept.count(name) == 0) e += v;
    }
    return -20 * std::log10(std::abs(e));  // signal power 1
  };
  const double none = sqnr_with({}).value();
  const std::vector<std::pair<double, std::string>> candidates = {{sqnr_with({"A"}).value() - none, "A"},
                                                                  {sqnr_with({"B"}).value() - none, "B"},
                                                                  {sqnr_with({"D"}).value() - none, "D"},
                                                                  {sqnr_with({"C"}).value() - none, "C"}};
  ASSERT_GT(candidates[0].first, 0);
  ASSERT_GT(candidates[2].first, 0);
  ASSERT_LT(candidates[3].first, 0);
  calls = 0;
  QFUSE_ASSERT_OK_AND_ASSIGN(KeepFloatChoice choice, ChooseKeepFloat(candidates, 3, none, sqnr_with));
  EXPECT_EQ(choice.layers, (std::vector<std::string>{"A", "D"}));
  EXPECT_EQ(calls, 3);  // A, A+B, A+D; C not tried
  EXPECT_NEAR(choice.output_sqnr_db, -20 * std::log10(0.2), 1e-9);
  // Nothing that helps: no layer, the all-int8 figure.
  QFUSE_ASSERT_OK_AND_ASSIGN(KeepFloatChoice none_chosen, ChooseKeepFloat({{-1.0, "C"}}, 3, none, sqnr_with));
  EXPECT_TRUE(none_chosen.layers.empty());
  EXPECT_EQ(none_chosen.output_sqnr_db, none);
  // k = 1: A only, in one run.
  calls = 0;
  QFUSE_ASSERT_OK_AND_ASSIGN(KeepFloatChoice one, ChooseKeepFloat(candidates, 1, none, sqnr_with));
  EXPECT_EQ(one.layers, (std::vector<std::string>{"A"}));
  EXPECT_EQ(calls, 1);
  // k <= 0: nothing tried.
  calls = 0;
  QFUSE_ASSERT_OK_AND_ASSIGN(KeepFloatChoice zero, ChooseKeepFloat(candidates, 0, none, sqnr_with));
  EXPECT_TRUE(zero.layers.empty());
  EXPECT_EQ(calls, 0);
}

// At most 4k runs when no candidate helps the set; NaN gains (no FLOAT output) are not tried.
TEST(ChooseKeepFloatTest, TriesAtMostFourKAndSkipsNaN) {
  int calls = 0;
  const auto never_better = [&](const std::set<std::string>&) -> absl::StatusOr<double> {
    ++calls;
    return 10.0;
  };
  std::vector<std::pair<double, std::string>> candidates;
  for (int i = 0; i < 20; ++i) candidates.emplace_back(1.0, absl::StrCat("L", i));
  QFUSE_ASSERT_OK_AND_ASSIGN(KeepFloatChoice choice, ChooseKeepFloat(candidates, 2, 10.0, never_better));
  EXPECT_TRUE(choice.layers.empty());
  EXPECT_EQ(choice.output_sqnr_db, 10.0);
  EXPECT_EQ(calls, 8);
  calls = 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  QFUSE_ASSERT_OK(ChooseKeepFloat({{nan, "A"}, {nan, "B"}}, 2, 10.0, never_better).status());
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace qfuse::pipeline
