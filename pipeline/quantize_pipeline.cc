#include "pipeline/quantize_pipeline.h"

#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "calib/calibrator.h"
#include "calib/graph_fingerprint.h"
#include "data/dataset.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "pipeline/evaluation.h"

namespace qfuse::pipeline {
namespace {

// Input bytes the per-layer analysis takes at most (see RunLevel).
constexpr int64_t kAnalysisInputBytes = int64_t{4} << 20;


namespace fs = std::filesystem;

class Stopwatch {
 public:
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Refuses to write `path` when it is one of the inputs.
absl::Status CheckNotAnInput(const std::string& path, const QuantizeConfig& config) {
  std::vector<std::string> inputs = {config.model_path, config.labels_path, config.calibration_table};
  for (const auto& s : config.calib_sources) inputs.push_back(s.path);
  for (const auto& s : config.eval_sources) inputs.push_back(s.path);
  for (const std::string& in : inputs) {
    if (!in.empty() && base::SameFile(in, path)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": output would overwrite an input; choose another --output"));
    }
  }
  return absl::OkStatus();
}

// The calibration samples: in memory (calib_tensors) when set, else read from calib_sources.
absl::StatusOr<std::unique_ptr<data::Dataset>> OpenCalibrationData(const QuantizeConfig& config, const ir::Graph& model,
                                                                    int64_t max_samples) {
  if (config.calib_tensors != nullptr) return data::OpenTensorDataset(config.calib_tensors, model, max_samples);
  return data::OpenDataset(config.calib_sources, model, max_samples);
}

absl::StatusOr<LevelResult> RunLevel(const QuantizeConfig& config, fusion::FusionLevel level,
                                     quant::DeployTarget target, const std::vector<ir::Tensor>& fp32_outputs,
                                     const std::vector<int64_t>& labels, data::Dataset& eval_data,
                                     int64_t eval_count) {
  LevelResult r;
  r.level = level;
  r.target = target;
  r.convert = config.convert;
  r.convert.target = target;
  r.convert = quant::WithTargetDefaults(r.convert, config.user_choices);
  const quant::ConvertOptions& convert = r.convert;
  // Files and messages: "full", or "full_onnxruntime" for another target.
  const std::string name = target == quant::DeployTarget::kQfuse
                               ? fusion::FusionLevelName(level)
                               : absl::StrCat(fusion::FusionLevelName(level), "_", quant::DeployTargetName(target));
  Stopwatch load;
  QFUSE_ASSIGN_OR_RETURN(ir::Model model, ir::LoadModel(config.model_path));
  r.seconds.load = load.Seconds();

  Stopwatch fuse;
  fusion::PipelineOptions fusion_options;
  fusion_options.unit_forms = quant::UnitFormsFor(target);
  QFUSE_RETURN_IF_ERROR(fusion::Fuse(&model, level, fusion_options).status());
  r.float_nodes = model.graph->num_nodes();
  r.seconds.fuse = fuse.Seconds();

  Stopwatch calibrate;
  if (!config.calibration_table.empty()) {
    QFUSE_ASSIGN_OR_RETURN(std::string fingerprint, calib::GraphFingerprint(*model.graph));
    QFUSE_ASSIGN_OR_RETURN(r.table, calib::ReadCalibrationTable(config.calibration_table, fingerprint,
                                                                config.force_calibration_table));
  } else {
    QFUSE_ASSIGN_OR_RETURN(auto calib_data, OpenCalibrationData(config, *model.graph, config.calib_samples));
    calib::CalibrateOptions options;
    options.threshold = config.threshold;
    options.activation_headroom = config.activation_headroom;
    options.bound_by_readers = config.bound_by_readers;
    // Tensors on the unsigned grid spend 256 levels on [0, T]: their threshold search keeps 256.
    options.unsigned_grid = quant::UnsignedGridOf(convert);
    options.num_samples = config.calib_samples;
    options.num_threads = config.threads;
    options.show_progress = config.show_progress;
    QFUSE_ASSIGN_OR_RETURN(calib::CalibrationRun run, calib::Calibrate(*model.graph, *calib_data, options));
    r.table = run.table;
  }
  r.seconds.calibrate = calibrate.Seconds();

  Stopwatch convert_watch;
  ir::Model fused_float;  // the float graph the layer analysis needs (conversion is in place)
  if (config.analysis_samples > 0) {
    fused_float.opset = model.opset;
    fused_float.graph = model.graph->Clone();
  }
  QFUSE_ASSIGN_OR_RETURN(r.conversion, quant::ConvertToQdq(&model, r.table, convert));
  for (const std::string& note : r.conversion.notes) absl::PrintF("%s: %s\n", name, note);
  r.model_file = (fs::path(config.output_dir) / absl::StrCat("model_int8_", name, ".onnx")).string();
  r.table_file = (fs::path(config.output_dir) / absl::StrCat("calibration_", name, ".json")).string();
  const std::string cache_file = (fs::path(config.output_dir) / absl::StrCat("calibration_", name, ".cache")).string();
  for (const std::string& out : {r.model_file, r.table_file, cache_file}) QFUSE_RETURN_IF_ERROR(CheckNotAnInput(out, config));
  QFUSE_RETURN_IF_ERROR(ir::SaveModel(model, r.model_file));
  QFUSE_RETURN_IF_ERROR(calib::WriteCalibrationTable(r.table, r.table_file));
  QFUSE_RETURN_IF_ERROR(calib::WriteCalibrationTable(r.table, cache_file));
  r.seconds.convert = convert_watch.Seconds();

  Stopwatch evaluate;
  EvaluateOptions eval;
  eval.max_samples = eval_count;
  eval.executor.num_threads = config.threads;
  eval.executor.integer_kernels = config.integer_kernels;
  eval.executor.requantize_mode = config.fixed_point_requant ? numerics::RequantizeMode::kFixed
                                                             : numerics::RequantizeMode::kOnnx;
  eval.show_progress = config.show_progress;
  const std::string label = absl::StrCat("evaluate int8 ", name);
  eval.label = label.c_str();
  QFUSE_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outputs, RunOnDataset(*model.graph, eval_data, eval));
  for (size_t k = 0; k < outputs.size() && k < fp32_outputs.size(); ++k) {
    if (fp32_outputs[k].dtype() != ir::DataType::kFloat32) continue;
    QFUSE_ASSIGN_OR_RETURN(OutputAgreement a, CompareOutputs(fp32_outputs[k], outputs[k]));
    if (a.worst_sample >= 0) a.worst_sample_name = eval_data.DescribeSample(a.worst_sample);
    r.outputs.push_back(a);
  }
  const OutputAgreement& agreement = r.outputs.front();
  r.agreement = agreement.top1_agreement;
  r.sqnr_db = agreement.sqnr_db;
  r.cosine = agreement.cosine;
  r.max_abs_diff = agreement.max_abs_diff;
  if (!labels.empty()) {
    QFUSE_ASSIGN_OR_RETURN(r.top1, Top1Accuracy(outputs[0], labels));
  }

  r.seconds.evaluate = evaluate.Seconds();

  Stopwatch analyze;
  if (config.analysis_samples > 0) {
    // The analysis keeps every layer's float output of every sample (it kept the int8 ones too
    // when a 320x320 detector took 3.3 GiB for 8 samples), so the samples are bounded by their
    // input bytes.
    const int64_t asked = std::min(config.analysis_samples, eval_data.size());
    QFUSE_ASSIGN_OR_RETURN(int64_t samples, data::BatchWithinInputBytes(eval_data, asked, kAnalysisInputBytes));
    if (samples < asked) {
      absl::PrintF("per-layer analysis %s: on %d of %d samples (it keeps every layer's output of each; at most %d MiB "
                   "of input)\n",
                   name, samples, asked, kAnalysisInputBytes >> 20);
    }
    if (eval_data.fixed_batch() > 0) samples = eval_data.fixed_batch();
    QFUSE_ASSIGN_OR_RETURN(auto batch, eval_data.ReadBatch(0, samples));
    LayerAnalysisOptions analysis;
    analysis.suggest_keep_float = config.suggest_keep_float;
    analysis.executor.num_threads = config.threads;
    analysis.executor.integer_kernels = false;  // simulated: every value keeps its float name
    analysis.show_progress = config.show_progress;
    analysis.label = absl::StrCat("per-layer analysis ", name);
    QFUSE_ASSIGN_OR_RETURN(r.analysis, AnalyzeLayers(fused_float, r.table, convert, batch, analysis));
  }
  if (!r.analysis.suggested_keep_float.empty()) {
    // The accuracy with the suggested layers kept float, on the whole evaluation set.
    quant::ConvertOptions options = convert;
    options.keep_float.insert(r.analysis.suggested_keep_float.begin(), r.analysis.suggested_keep_float.end());
    QFUSE_ASSIGN_OR_RETURN(ir::Model suggested, QuantizedCopy(fused_float, r.table, options));
    const std::string label_text = absl::StrCat("evaluate int8 ", name, " with keep-float suggestion");
    eval.label = label_text.c_str();
    QFUSE_ASSIGN_OR_RETURN(std::vector<ir::Tensor> with, RunOnDataset(*suggested.graph, eval_data, eval));
    QFUSE_ASSIGN_OR_RETURN(OutputAgreement a, CompareOutputs(fp32_outputs[0], with[0]));
    r.suggestion_agreement = a.top1_agreement;
    r.suggestion_sqnr_db = a.sqnr_db;
    if (!labels.empty()) {
      QFUSE_ASSIGN_OR_RETURN(r.suggestion_top1, Top1Accuracy(with[0], labels));
    }
  }
  r.seconds.analyze = analyze.Seconds();
  return r;
}

// Without evaluation data: the calibration data's samples past the first calib_samples, or,
// when it has no more than that, its last quarter (calibration then uses the rest). Says so.
absl::StatusOr<std::unique_ptr<data::Dataset>> HeldBackSamples(const QuantizeConfig& config, const ir::Graph& model,
                                                                int64_t* calib_samples) {
  if (!config.labels_path.empty()) {
    return absl::InvalidArgumentError("--labels belongs to --eval_data: give both, or neither");
  }
  QFUSE_ASSIGN_OR_RETURN(auto all, OpenCalibrationData(config, model, 0));
  const int64_t total = all->size();
  int64_t held = total > config.calib_samples ? total - config.calib_samples : total / 4;
  if (config.eval_samples > 0) held = std::min(held, config.eval_samples);
  *calib_samples = std::min(config.calib_samples, total - held);
  if (held < 1 || *calib_samples < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        all->DescribeSample(0), ": ", total,
        " calibration sample(s) are too few to hold some back for evaluation; give --eval_data"));
  }
  absl::PrintF("no --eval_data: evaluating on %d calibration samples held back (%s .. %s), calibrating on the first %d\n",
               held, all->DescribeSample(*calib_samples), all->DescribeSample(*calib_samples + held - 1),
               *calib_samples);
  return data::SliceDataset(std::move(all), *calib_samples, held);
}

}  // namespace

absl::StatusOr<QuantizeResult> RunQuantize(const QuantizeConfig& config) {
  if (config.levels.empty()) return absl::InvalidArgumentError("no fusion level to run");
  if (config.targets.empty()) return absl::InvalidArgumentError("no target to run");
  if (!config.calibration_table.empty() && (config.levels.size() != 1 || config.targets.size() != 1)) {
    return absl::InvalidArgumentError(
        "--calibration_table belongs to one fusion level and target: use --fusion=full|bn|none and one --target");
  }
  QFUSE_RETURN_IF_ERROR(calib::CheckActivationHeadroom(config.activation_headroom));
  if (!config.calibration_table.empty() && config.activation_headroom != 1.0) {
    return absl::InvalidArgumentError(
        "--activation_headroom applies when calibrating: a --calibration_table already holds its thresholds");
  }
  if (!config.calibration_table.empty() && !config.bound_by_readers) {
    return absl::InvalidArgumentError(
        "--bound_by_readers applies when calibrating: a --calibration_table already holds its thresholds");
  }
  std::error_code ec;
  fs::create_directories(config.output_dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(config.output_dir, ": cannot create (", ec.message(), ")"));

  QuantizeResult result;
  result.model_path = config.model_path;
  Stopwatch fp32_watch;
  QFUSE_ASSIGN_OR_RETURN(ir::Model float_model, ir::LoadModel(config.model_path));
  for (const std::string& note : float_model.notes) absl::PrintF("%s: %s\n", config.model_path, note);
  QuantizeConfig effective = config;  // with the calibration sample count actually used
  std::unique_ptr<data::Dataset> eval_data;
  if (!config.eval_sources.empty()) {
    QFUSE_ASSIGN_OR_RETURN(eval_data, data::OpenDataset(config.eval_sources, *float_model.graph, config.eval_samples));
  } else {
    QFUSE_ASSIGN_OR_RETURN(eval_data, HeldBackSamples(config, *float_model.graph, &effective.calib_samples));
  }
  result.eval_samples = eval_data->size();
  std::vector<int64_t> labels;
  if (!config.labels_path.empty()) {
    QFUSE_ASSIGN_OR_RETURN(labels, data::ReadIdxLabels(config.labels_path));
    if (static_cast<int64_t>(labels.size()) < result.eval_samples) {
      return absl::InvalidArgumentError(absl::StrCat(config.labels_path, ": ", labels.size(), " labels for ",
                                                     result.eval_samples, " evaluation samples"));
    }
  }
  EvaluateOptions eval;
  eval.executor.num_threads = config.threads;
  eval.show_progress = config.show_progress;
  eval.label = "evaluate fp32";
  QFUSE_ASSIGN_OR_RETURN(std::vector<ir::Tensor> fp32_outputs, RunOnDataset(*float_model.graph, *eval_data, eval));
  if (fp32_outputs.empty() || fp32_outputs[0].dtype() != ir::DataType::kFloat32) {
    return absl::InvalidArgumentError("the model's first output is not FLOAT");
  }
  if (!labels.empty()) {
    QFUSE_ASSIGN_OR_RETURN(result.fp32_top1, Top1Accuracy(fp32_outputs[0], labels));
  }
  result.fp32_seconds = fp32_watch.Seconds();
  result.calib_samples = config.calibration_table.empty() ? effective.calib_samples : 0;
  for (quant::DeployTarget target : config.targets) {
    for (fusion::FusionLevel level : config.levels) {
      if (target == quant::DeployTarget::kTensorRt && level != fusion::FusionLevel::kFull) {
        absl::PrintF("target tensorrt: level %s skipped (TensorRT's placement is the full level's units)\n",
                     fusion::FusionLevelName(level));
        continue;
      }
      absl::StatusOr<LevelResult> r =
          RunLevel(effective, level, target, fp32_outputs, labels, *eval_data, result.eval_samples);
      if (!r.ok()) {
        std::string where = absl::StrCat("fusion level ", fusion::FusionLevelName(level));
        if (config.targets.size() > 1 || target != quant::DeployTarget::kQfuse) {
          absl::StrAppend(&where, ", target ", quant::DeployTargetName(target));
        }
        return absl::Status(r.status().code(), absl::StrCat(where, ": ", r.status().message()));
      }
      result.levels.push_back(*std::move(r));
    }
  }
  if (result.levels.empty()) return absl::InvalidArgumentError("no fusion level runs for the chosen targets");
  // The samples actually calibrated on (the data may hold fewer than --calib_samples).
  if (config.calibration_table.empty() && !result.levels.empty()) result.calib_samples = result.levels[0].table.samples;
  return result;
}

std::string ResultName(const LevelResult& result) {
  std::string name = fusion::FusionLevelName(result.level);
  if (result.target != quant::DeployTarget::kQfuse) absl::StrAppend(&name, "/", quant::DeployTargetName(result.target));
  return name;
}

}  // namespace qfuse::pipeline
