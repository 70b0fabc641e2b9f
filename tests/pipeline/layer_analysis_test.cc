// The per-layer analysis against its definition, on the bundled samples and Fashion-MNIST
// images: a layer's isolated figures are those of the whole float graph with only that layer
// quantized, run end to end here (the analysis runs only the part that computes the layer),
// and its accumulated figures those of the whole Q/DQ graph; bit for bit.
#include "pipeline/layer_analysis.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "pipeline/evaluation.h"
#include "runtime/executor.h"
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
  int quantized_alone = 0;
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
  }
  EXPECT_GE(quantized_alone, 5);
}

TEST(LayerAnalysisTest, FiguresAreThoseOfWholeGraphRuns) {
  for (const char* model : {"resnet_small", "mobilenetv2_small"}) {
    for (const fusion::FusionLevel level : {fusion::FusionLevel::kFull, fusion::FusionLevel::kNone}) {
      ExpectAnalysisMatchesWholeGraphRuns(model, level);
    }
  }
}

}  // namespace
}  // namespace qfuse::pipeline
