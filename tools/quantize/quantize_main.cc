// qfuse quantize: float ONNX -> int8 QDQ ONNX at each fusion level, with the accuracy of
// fused vs unfused quantization. With no arguments it quantizes the bundled ResNet-style
// sample on Fashion-MNIST (512 training images to calibrate, the 10,000 test images to
// evaluate) and writes everything into out/quantize-<model>/.
//   bazel run //tools:quantize
//   bazel run //tools:quantize -- --model=models/mobilenetv2_small/model.onnx --method=percentile
#include <cstdio>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/output_dir.h"
#include "base/status_macros.h"
#include "pipeline/quantize_pipeline.h"
#include "tools/data_flags.h"
#include "tools/flag_util.h"
#include "tools/quantize/report.h"
#include "tools/tool_main.h"
#include "tools/workspace_path.h"

ABSL_FLAG(std::string, model, "models/resnet_small/model.onnx", "float ONNX model to quantize");
ABSL_FLAG(std::vector<std::string>, calib_data, {},
          "calibration data: path, or input_name:path per model input (IDX, .npy, .pb folder, image folder, raw); "
          "required except for the bundled samples (Fashion-MNIST training images)");
ABSL_FLAG(int64_t, calib_samples, 512, "calibration samples, from the start of --calib_data");
ABSL_FLAG(std::vector<std::string>, eval_data, {},
          "evaluation data, same spelling as --calib_data; empty: the bundled samples use the Fashion-MNIST test "
          "images, any other model the calibration samples held back from calibration");
ABSL_FLAG(int64_t, eval_samples, 0, "evaluation samples (0: all)");
ABSL_FLAG(std::string, labels, "",
          "IDX label file for --eval_data (the bundled samples default to Fashion-MNIST's); empty: report agreement "
          "with fp32 instead of accuracy");
ABSL_FLAG(std::string, method, "auto",
          "activation calibration: auto (per tensor, the least sample-balanced squared error of the others), entropy, "
          "percentile, mse, max or balanced_mse (mse with every calibration sample's error relative to its size)");
ABSL_FLAG(double, percentile, 99.99, "for --method=percentile");
ABSL_FLAG(double, activation_headroom, 1.0,
          "every activation threshold, once chosen, times this factor (> 0): headroom for deployment data beyond "
          "the calibration samples' ranges, at the cost of resolution (docs/zoo.md)");
ABSL_FLAG(bool, bound_by_readers, true,
          "lower an activation's threshold to the bound of the saturating ops that read it (Sigmoid, Tanh, "
          "HardSigmoid, Clip; ir/reader_saturation.h), beyond which their outputs stay within 2^-10 of their range "
          "(exactly, through a linear Resize only approximately)");
ABSL_FLAG(bool, per_channel, true, "per-output-channel weight scales (false: one per tensor)");
ABSL_FLAG(bool, reduce_range, false,
          "7-bit weights in [-64, 64] (onnxruntime's reduce_range): exact vpmaddubsw on x86 without VNNI, "
          "about 6 dB less weight SQNR; default: the target's (onnxruntime: true, else false)");
ABSL_FLAG(std::string, activation_dtype, "int8",
          "int8 (symmetric) or uint8 (also QInt8 / QUInt8); default: the target's (onnxruntime: uint8, else int8)");
ABSL_FLAG(bool, int8_as_uint8, true,
          "store int8 activations as UINT8 with zero point 128 (the same grid and outputs), so onnxruntime's x86 "
          "QLinearConv (uint8 activations only) runs every quantized Conv; default: true for target qfuse "
          "(tensorrt: always INT8, zero point 0)");
ABSL_FLAG(bool, unsigned_non_negative, true,
          "with --int8_as_uint8: values non-negative by construction (Relu/Relu6/Sigmoid outputs and what pools, "
          "moves or concatenates them) get the unsigned grid, zero point 0 and scale T / 255 (twice the levels); "
          "false: every activation on the symmetric grid");
ABSL_FLAG(bool, bounded_below, true,
          "with --unsigned_non_negative: values bounded below by construction at L < 0 (HardSwish, SiLU outputs) get "
          "a uint8 grid of [max(L, -T), T] (zero point round(-lo / scale)); false: those keep the symmetric grid");
ABSL_FLAG(bool, integer_heads, true,
          "target qfuse: write Conv units with a residual or activation as ConvInteger -> bias -> "
          "DequantizeLinear -> ... (quant/integer_heads.h), which onnxruntime runs with qfuse's exact arithmetic; "
          "false: DequantizeLinear -> Conv (onnxruntime runs those convolutions in float)");
ABSL_FLAG(std::string, activation_type, "", "alias of --activation_dtype (onnxruntime.quantization's name)");
ABSL_FLAG(std::string, weight_type, "QInt8", "weights are int8: QInt8 / int8 (onnxruntime.quantization's name)");
ABSL_FLAG(std::string, target, "qfuse",
          "where the int8 model runs: qfuse (most accurate; one requantization per unit), onnxruntime (its QDQ "
          "fusion runs every Conv/MatMul as an integer kernel), tensorrt (TensorRT's explicit-quantization "
          "placement), a comma list, or all");
ABSL_FLAG(std::vector<std::string>, nodes_to_exclude, {}, "alias of --keep_float (onnxruntime.quantization's name)");
ABSL_FLAG(std::string, fusion, "all", "fusion level: full, bn, none or all");
ABSL_FLAG(std::string, requant, "onnx", "integer runtime requantization: onnx or fixed");
ABSL_FLAG(std::vector<std::string>, keep_float, {}, "node names to leave in float");
ABSL_FLAG(std::string, calibration_table, "", "reuse this calibration table (JSON or TensorRT cache; one level)");
ABSL_FLAG(bool, force_calibration_table, false, "use --calibration_table even if made for another graph");
ABSL_FLAG(std::string, output, "", "output folder (default out/quantize-<model name>)");
ABSL_FLAG(std::string, report, "", "report base path without extension (default <output>/report)");
ABSL_FLAG(int, threads, 2, "runtime threads");
ABSL_FLAG(int64_t, analysis_samples, 256, "evaluation samples for the per-layer analysis (0: skip it)");
ABSL_FLAG(int, suggest_keep_float, 0, "name the K layers whose float fallback helps most");

namespace qfuse::tools {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<quant::ActivationType> ParseActivationType(const std::string& text) {
  if (text == "int8" || text == "QInt8") return quant::ActivationType::kInt8;
  if (text == "uint8" || text == "QUInt8") return quant::ActivationType::kUint8;
  return absl::InvalidArgumentError(absl::StrCat("--activation_dtype: '", text, "' is not int8 or uint8"));
}

// "qfuse", "onnxruntime,tensorrt", "all".
absl::StatusOr<std::vector<quant::DeployTarget>> ParseTargets(const std::string& text) {
  if (text == "all") {
    return std::vector<quant::DeployTarget>{quant::DeployTarget::kQfuse, quant::DeployTarget::kOnnxRuntime,
                                            quant::DeployTarget::kTensorRt};
  }
  std::vector<quant::DeployTarget> targets;
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    absl::StatusOr<quant::DeployTarget> t = quant::ParseDeployTarget(name);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("--target: ", t.status().message(), " (or all)"));
    if (std::find(targets.begin(), targets.end(), *t) == targets.end()) targets.push_back(*t);
  }
  return targets;
}

absl::StatusOr<pipeline::QuantizeConfig> ConfigFromFlags() {
  pipeline::QuantizeConfig c;
  c.model_path = ResolveUserPath(absl::GetFlag(FLAGS_model));
  QFUSE_ASSIGN_OR_RETURN(data::DataSource defaults, ReaderDefaultsFromFlags());
  const std::vector<std::string> calib_data = absl::GetFlag(FLAGS_calib_data);
  const std::vector<std::string> eval_data = absl::GetFlag(FLAGS_eval_data);
  std::string labels = absl::GetFlag(FLAGS_labels);
  QFUSE_ASSIGN_OR_RETURN(c.calib_sources, CalibrationSources(c.model_path, calib_data, defaults));
  if (!eval_data.empty()) {
    QFUSE_ASSIGN_OR_RETURN(c.eval_sources, DataSourcesFromValues(eval_data, defaults));
  } else if (calib_data.empty()) {  // a bundled sample on its default data: Fashion-MNIST's test images
    const data::DataSource idx;
    QFUSE_ASSIGN_OR_RETURN(c.eval_sources,
                           DataSourcesFromValues({std::string(kFashionMnistDir) + "t10k-images-idx3-ubyte.gz"}, idx));
    if (labels.empty()) labels = std::string(kFashionMnistDir) + "t10k-labels-idx1-ubyte.gz";
  }
  c.calib_samples = absl::GetFlag(FLAGS_calib_samples);
  c.eval_samples = absl::GetFlag(FLAGS_eval_samples);
  if (c.calib_samples <= 0) return absl::InvalidArgumentError("--calib_samples must be positive");
  c.labels_path = labels.empty() ? "" : ResolveUserPath(labels);
  QFUSE_ASSIGN_OR_RETURN(c.threshold.method, calib::ParseCalibrationMethod(absl::GetFlag(FLAGS_method)));
  c.threshold.percentile = absl::GetFlag(FLAGS_percentile);
  c.activation_headroom = absl::GetFlag(FLAGS_activation_headroom);
  c.bound_by_readers = absl::GetFlag(FLAGS_bound_by_readers);
  c.convert.per_channel_weights = absl::GetFlag(FLAGS_per_channel);
  c.convert.reduce_range = absl::GetFlag(FLAGS_reduce_range);
  c.user_choices.reduce_range = IsFlagSet(FLAGS_reduce_range);
  QFUSE_ASSIGN_OR_RETURN(const std::string dtype, GetFlagOrAlias(FLAGS_activation_dtype, FLAGS_activation_type));
  QFUSE_ASSIGN_OR_RETURN(c.convert.activation_type, ParseActivationType(dtype));
  c.user_choices.activation_type = IsFlagSet(FLAGS_activation_type) || IsFlagSet(FLAGS_activation_dtype);
  c.convert.int8_as_uint8 = absl::GetFlag(FLAGS_int8_as_uint8);
  c.user_choices.int8_as_uint8 = IsFlagSet(FLAGS_int8_as_uint8);
  c.convert.unsigned_non_negative = absl::GetFlag(FLAGS_unsigned_non_negative);
  c.user_choices.unsigned_non_negative = IsFlagSet(FLAGS_unsigned_non_negative);
  c.convert.bounded_below = absl::GetFlag(FLAGS_bounded_below);
  c.user_choices.bounded_below = IsFlagSet(FLAGS_bounded_below);
  c.convert.integer_heads = absl::GetFlag(FLAGS_integer_heads);
  c.user_choices.integer_heads = IsFlagSet(FLAGS_integer_heads);
  const std::string weight_type = absl::GetFlag(FLAGS_weight_type);
  if (weight_type != "QInt8" && weight_type != "int8") {
    return absl::InvalidArgumentError(absl::StrCat("--weight_type: '", weight_type, "': weights are int8 (QInt8)"));
  }
  QFUSE_ASSIGN_OR_RETURN(c.targets, ParseTargets(absl::GetFlag(FLAGS_target)));
  for (const std::string& n : absl::GetFlag(FLAGS_keep_float)) c.convert.keep_float.insert(n);
  for (const std::string& n : absl::GetFlag(FLAGS_nodes_to_exclude)) c.convert.keep_float.insert(n);
  const std::string fusion = absl::GetFlag(FLAGS_fusion);
  if (fusion == "all") {
    c.levels = {fusion::FusionLevel::kFull, fusion::FusionLevel::kBn, fusion::FusionLevel::kNone};
  } else {
    QFUSE_ASSIGN_OR_RETURN(fusion::FusionLevel level, fusion::ParseFusionLevel(fusion));
    c.levels = {level};
  }
  const std::string requant = absl::GetFlag(FLAGS_requant);
  if (requant != "onnx" && requant != "fixed") {
    return absl::InvalidArgumentError(absl::StrCat("--requant: '", requant, "' is not onnx or fixed"));
  }
  c.fixed_point_requant = requant == "fixed";
  c.calibration_table =
      absl::GetFlag(FLAGS_calibration_table).empty() ? "" : ResolveUserPath(absl::GetFlag(FLAGS_calibration_table));
  c.force_calibration_table = absl::GetFlag(FLAGS_force_calibration_table);
  c.output_dir = absl::GetFlag(FLAGS_output).empty()
                     ? ResolveUserPath("out/quantize-" + fs::path(c.model_path).parent_path().filename().string())
                     : ResolveUserPath(absl::GetFlag(FLAGS_output));
  c.threads = absl::GetFlag(FLAGS_threads);
  c.analysis_samples = absl::GetFlag(FLAGS_analysis_samples);
  c.suggest_keep_float = absl::GetFlag(FLAGS_suggest_keep_float);
  return c;
}

absl::Status Main() {
  QFUSE_ASSIGN_OR_RETURN(pipeline::QuantizeConfig config, ConfigFromFlags());
  absl::PrintF("qfuse quantize: %s -> %s\n", config.model_path, config.output_dir);
  // One run per output folder, and every output path writable before the long work.
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<base::OutputDirLock> lock, base::OutputDirLock::Acquire(config.output_dir));
  if (lock->stale_temp_files_removed() > 0) {
    absl::PrintF("removed %d temporary file(s) that killed runs left in %s\n", lock->stale_temp_files_removed(),
                 config.output_dir);
  }
  const std::string base = absl::GetFlag(FLAGS_report).empty() ? (fs::path(config.output_dir) / "report").string()
                                                               : ResolveUserPath(absl::GetFlag(FLAGS_report));
  QFUSE_RETURN_IF_ERROR(base::CheckWritable(base + ".json"));
  QFUSE_RETURN_IF_ERROR(base::CheckWritable(base + ".html"));
  QFUSE_ASSIGN_OR_RETURN(pipeline::QuantizeResult result, pipeline::RunQuantize(config));
  QFUSE_RETURN_IF_ERROR(WriteReports(result, config, base + ".json", base + ".html"));
  absl::PrintF("%s", SummaryTable(result, config));
  absl::PrintF("wrote %s/{model_int8_<run>.onnx, calibration_<run>.json, calibration_<run>.cache}, %s.json, %s.html\n",
               config.output_dir, base, base);
  return absl::OkStatus();
}

}  // namespace
}  // namespace qfuse::tools

int main(int argc, char** argv) {
  return qfuse::tools::RunTool(argc, argv,
                               "Quantizes a float ONNX model to int8 (QDQ) at fusion levels full/bn/none and reports accuracy.\n"
      "With no arguments: the bundled ResNet-style sample on Fashion-MNIST.",
                               qfuse::tools::Main);
}
