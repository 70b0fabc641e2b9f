// End to end: the quantize job on the ResNet sample with a handful of samples, at every
// fusion level. Files are written, load back as valid ONNX, reruns give the same bytes,
// tables can be reused (and are refused for another graph), inputs are never overwritten.
#include "pipeline/quantize_pipeline.h"

#include <filesystem>
#include <fstream>

#include "base/file_util.h"
#include "gtest/gtest.h"
#include "ir/onnx_import.h"
#include "tests/testing/status_matchers.h"
#include "tools/quantize/report.h"
#include <nlohmann/json.hpp>

namespace qfuse::pipeline {
namespace {

namespace fs = std::filesystem;

constexpr char kData[] = "/usr/share/datasets/fashion-mnist/";

QuantizeConfig SmallConfig(const std::string& output) {
  QuantizeConfig c;
  c.model_path = "models/resnet_small/model.onnx";
  data::DataSource train;
  train.path = std::string(kData) + "train-images-idx3-ubyte.gz";
  data::DataSource test;
  test.path = std::string(kData) + "t10k-images-idx3-ubyte.gz";
  c.calib_sources = {train};
  c.eval_sources = {test};
  c.labels_path = std::string(kData) + "t10k-labels-idx1-ubyte.gz";
  c.calib_samples = 32;
  c.eval_samples = 64;
  c.levels = {fusion::FusionLevel::kFull, fusion::FusionLevel::kBn, fusion::FusionLevel::kNone};
  c.output_dir = output;
  c.analysis_samples = 8;
  c.suggest_keep_float = 1;
  c.show_progress = false;
  return c;
}

std::string Tmp(const std::string& name) { return (fs::path(std::getenv("TEST_TMPDIR")) / name).string(); }

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> s = base::ReadFileToString(path);
  return s.ok() ? *s : "<missing " + path + ">";
}

TEST(QuantizePipelineTest, AllLevelsEndToEndAndDeterministic) {
  const QuantizeConfig config = SmallConfig(Tmp("run1"));
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizeResult result, RunQuantize(config));
  ASSERT_EQ(result.levels.size(), 3u);
  EXPECT_EQ(result.eval_samples, 64);
  EXPECT_GT(result.fp32_top1, 80);
  for (const LevelResult& level : result.levels) {
    SCOPED_TRACE(fusion::FusionLevelName(level.level));
    // The int8 model is a valid ONNX model that qfuse loads back.
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, ir::LoadModel(level.model_file));
    EXPECT_EQ(model.opset, 13);
    EXPECT_TRUE(fs::exists(level.table_file));
    EXPECT_GT(level.top1, 75);
    EXPECT_GT(level.agreement, 85);
    EXPECT_GT(level.sqnr_db, 10);
    EXPECT_GT(level.cosine, 0.98);
    EXPECT_FALSE(level.analysis.layers.empty());
    EXPECT_EQ(level.analysis.samples, 8);  // 28x28 samples: far within the analysis's input bound
    for (size_t i = 1; i < level.analysis.layers.size(); ++i) {
      EXPECT_LE(level.analysis.layers[i - 1].sqnr_accumulated, level.analysis.layers[i].sqnr_accumulated);
    }
  }
  // Fused quantization keeps the logits closer to fp32 than quantizing every op.
  EXPECT_GT(result.levels[0].sqnr_db, result.levels[2].sqnr_db);
  QFUSE_ASSERT_OK(tools::WriteReports(result, config, Tmp("run1/report.json"), Tmp("run1/report.html")));
  const nlohmann::json report = nlohmann::json::parse(Read(Tmp("run1/report.json")));
  EXPECT_EQ(report.at("levels").size(), 3u);

  // A rerun into another folder writes the same bytes.
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizeResult again, RunQuantize(SmallConfig(Tmp("run2"))));
  QFUSE_ASSERT_OK(tools::WriteReports(again, SmallConfig(Tmp("run2")), Tmp("run2/report.json"), Tmp("run2/report.html")));
  for (const char* file : {"model_int8_full.onnx", "model_int8_bn.onnx", "model_int8_none.onnx",
                           "calibration_full.json", "calibration_none.cache", "report.json"}) {
    EXPECT_EQ(Read(Tmp(std::string("run1/") + file)), Read(Tmp(std::string("run2/") + file))) << file;
  }
  // No temporary files are left.
  for (const auto& entry : fs::directory_iterator(Tmp("run1"))) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

TEST(QuantizePipelineTest, ReusesATableAndRefusesOneForAnotherGraph) {
  QuantizeConfig first = SmallConfig(Tmp("table1"));
  first.levels = {fusion::FusionLevel::kFull, fusion::FusionLevel::kNone};
  first.analysis_samples = 0;
  QFUSE_ASSERT_OK(RunQuantize(first).status());

  QuantizeConfig reuse = SmallConfig(Tmp("table2"));
  reuse.levels = {fusion::FusionLevel::kFull};
  reuse.analysis_samples = 0;
  reuse.calibration_table = Tmp("table1/calibration_full.json");
  QFUSE_ASSERT_OK_AND_ASSIGN(QuantizeResult result, RunQuantize(reuse));
  EXPECT_EQ(Read(Tmp("table1/model_int8_full.onnx")), Read(Tmp("table2/model_int8_full.onnx")));

  // The `none` table was made for the unfused graph: refused for `full`, unless forced.
  reuse.calibration_table = Tmp("table1/calibration_none.json");
  absl::StatusOr<QuantizeResult> refused = RunQuantize(reuse);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("made for graph"), std::string::npos) << refused.status();
  // One table cannot serve several levels.
  reuse.levels = {fusion::FusionLevel::kFull, fusion::FusionLevel::kBn};
  EXPECT_EQ(RunQuantize(reuse).status().code(), absl::StatusCode::kInvalidArgument);
  // Options that act while calibrating are refused with a table, not silently dropped.
  reuse.levels = {fusion::FusionLevel::kFull};
  reuse.calibration_table = Tmp("table1/calibration_full.json");
  reuse.bound_by_readers = false;
  absl::StatusOr<QuantizeResult> unbounded = RunQuantize(reuse);
  EXPECT_EQ(unbounded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unbounded.status().message().find("--bound_by_readers applies when calibrating"), std::string::npos)
      << unbounded.status();
}

TEST(QuantizePipelineTest, NeverOverwritesAnInput) {
  // The "model" lives where an output of the same name would be written.
  const std::string dir = Tmp("clash");
  fs::create_directories(dir);
  fs::copy_file("models/resnet_small/model.onnx", dir + "/model_int8_full.onnx", fs::copy_options::overwrite_existing);
  const std::string before = Read(dir + "/model_int8_full.onnx");
  QuantizeConfig config = SmallConfig(dir);
  config.model_path = dir + "/model_int8_full.onnx";
  config.levels = {fusion::FusionLevel::kFull};
  config.analysis_samples = 0;
  absl::StatusOr<QuantizeResult> result = RunQuantize(config);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("would overwrite an input"), std::string::npos) << result.status();
  EXPECT_EQ(Read(dir + "/model_int8_full.onnx"), before);
}

TEST(QuantizePipelineTest, BadDataIsAOneLineErrorNamingTheFile) {
  QuantizeConfig config = SmallConfig(Tmp("bad"));
  config.calib_sources[0].path = Tmp("no_such_file.gz");
  absl::StatusOr<QuantizeResult> result = RunQuantize(config);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("no_such_file.gz"), std::string::npos) << result.status();
  EXPECT_EQ(result.status().message().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace qfuse::pipeline
