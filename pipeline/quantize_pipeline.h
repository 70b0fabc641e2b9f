// The quantize job: for each fusion level, fuse, calibrate (or reuse a table), convert to
// int8 QDQ, write the model and its calibration table, and evaluate against fp32.
#ifndef QFUSE_PIPELINE_QUANTIZE_PIPELINE_H_
#define QFUSE_PIPELINE_QUANTIZE_PIPELINE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calib/calibration_table.h"
#include "calib/thresholds.h"
#include "data/data_source.h"
#include "data/tensor_dataset.h"
#include "fusion/pipeline.h"
#include "pipeline/evaluation.h"
#include "pipeline/layer_analysis.h"
#include "quant/deploy_target.h"
#include "quant/qdq_converter.h"

namespace qfuse::pipeline {

struct QuantizeConfig {
  std::string model_path;
  std::vector<data::DataSource> calib_sources;
  // In-memory calibration samples (calib/tensor_dataset.h), used instead of calib_sources when set.
  std::shared_ptr<const data::TensorSamples> calib_tensors;
  int64_t calib_samples = 512;
  // Empty: evaluate on calibration samples held back from calibration (see RunQuantize).
  std::vector<data::DataSource> eval_sources;
  int64_t eval_samples = 0;  // 0: all
  std::string labels_path;   // "" : accuracy is agreement with fp32
  calib::ThresholdOptions threshold;
  double activation_headroom = 1.0;  // calib::CalibrateOptions::activation_headroom
  bool bound_by_readers = true;      // calib::CalibrateOptions::bound_by_readers
  quant::ConvertOptions convert;  // its `target` is ignored: each of `targets` is run
  quant::UserChoices user_choices;  // fields of `convert` the user set; the rest take each target's defaults
  std::vector<fusion::FusionLevel> levels;
  // Each level is run for each target (tensorrt at level full only: its placement is the unit's).
  std::vector<quant::DeployTarget> targets = {quant::DeployTarget::kQfuse};
  bool integer_kernels = true;           // evaluate with the integer runtime
  bool fixed_point_requant = false;      // --requant fixed
  std::string calibration_table;         // reuse this table (single level only)
  bool force_calibration_table = false;  // even if made for another graph
  std::string output_dir;
  int threads = 2;
  int64_t analysis_samples = 256;  // per-layer analysis inputs (0: skip the analysis)
  int suggest_keep_float = 0;
  bool show_progress = true;
};

struct PhaseSeconds {
  double load = 0, fuse = 0, calibrate = 0, convert = 0, evaluate = 0, analyze = 0;
};

struct LevelResult {
  fusion::FusionLevel level = fusion::FusionLevel::kFull;
  quant::DeployTarget target = quant::DeployTarget::kQfuse;
  quant::ConvertOptions convert;  // as used: the target's defaults where the user chose nothing
  std::string model_file;  // written int8 model
  std::string table_file;  // written calibration table (JSON; a TensorRT cache beside it)
  int64_t float_nodes = 0;  // nodes of the fused float graph
  quant::ConversionStats conversion;
  double top1 = -1;       // percent; -1 without labels
  double agreement = 0;   // top-1 agreement with fp32, percent
  double sqnr_db = 0;     // logits vs fp32
  double cosine = 0;
  double max_abs_diff = 0;
  std::vector<OutputAgreement> outputs;  // every FLOAT graph output vs fp32; the fields above are outputs[0]'s
  // With the analysis' suggested layers kept float (when there is a suggestion).
  double suggestion_top1 = -1;
  double suggestion_agreement = 0;  // NaN for outputs that are not rows of classes
  double suggestion_sqnr_db = std::numeric_limits<double>::quiet_NaN();  // output 0's, on the evaluation set
  PhaseSeconds seconds;
  calib::CalibrationTable table;
  LayerAnalysis analysis;
};

struct QuantizeResult {
  std::string model_path;
  int64_t calib_samples = 0;
  int64_t eval_samples = 0;
  double fp32_top1 = -1;
  double fp32_seconds = 0;
  std::vector<LevelResult> levels;
};

absl::StatusOr<QuantizeResult> RunQuantize(const QuantizeConfig& config);

// "full" for the qfuse target, "full/onnxruntime" for another: the row label of a result.
std::string ResultName(const LevelResult& result);

}  // namespace qfuse::pipeline

#endif  // QFUSE_PIPELINE_QUANTIZE_PIPELINE_H_
