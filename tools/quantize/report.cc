// SummaryTable, ReportJson and WriteReports; the HTML page is in report_html.cc.
#include "tools/quantize/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "calib/thresholds.h"
#include "fusion/pipeline.h"
#include "nlohmann/json.hpp"
#include "tools/quantize/report_summary.h"

namespace qfuse::tools {
namespace {

using Json = nlohmann::ordered_json;

// JSON has no inf/NaN: non-finite values (SQNR of identical outputs, min/max read from a
// TensorRT cache) are written as null.
Json Number(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

// A float32 as the shortest decimal that reads back to the same float (at most 9 digits),
// instead of the 17 digits of its exact double value.
Json Number(float value) {
  if (!std::isfinite(value)) return Json(nullptr);
  return Json(std::strtod(absl::StrFormat("%.9g", value).c_str(), nullptr));
}

std::string Basename(const std::string& path) { return std::filesystem::path(path).filename().string(); }

const char* ActivationTypeName(quant::ActivationType type) {
  switch (type) {
    case quant::ActivationType::kInt8: return "int8";
    case quant::ActivationType::kUint8: return "uint8";
  }
  return "?";
}

Json ConfigJson(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config) {
  Json levels = Json::array();
  for (fusion::FusionLevel level : config.levels) levels.push_back(fusion::FusionLevelName(level));
  Json keep_float = Json::array();
  for (const std::string& node : config.convert.keep_float) keep_float.push_back(node);  // std::set: sorted
  Json c;
  c["model"] = config.model_path;
  c["method"] = std::string(calib::CalibrationMethodName(config.threshold.method));
  c["percentile"] = Number(config.threshold.percentile);
  c["activation_headroom"] = Number(config.activation_headroom);
  c["bound_by_readers"] = config.bound_by_readers;
  c["per_channel"] = config.convert.per_channel_weights;
  c["reduce_range"] = config.convert.reduce_range;
  c["activation_type"] = ActivationTypeName(config.convert.activation_type);
  c["int8_as_uint8"] = config.convert.int8_as_uint8;
  c["integer_heads"] = config.convert.integer_heads;
  c["keep_float"] = keep_float;
  c["levels"] = levels;
  c["calibration_table"] = config.calibration_table.empty() ? Json(nullptr) : Json(config.calibration_table);
  c["integer_kernels"] = config.integer_kernels;
  c["requant"] = config.fixed_point_requant ? "fixed" : "onnx";
  c["samples"] = {{"calibration", result.calib_samples},
                  {"evaluation", result.eval_samples},
                  {"analysis", config.analysis_samples}};
  c["suggest_keep_float"] = config.suggest_keep_float;
  c["labels"] = !config.labels_path.empty();
  return c;
}

Json LayerJson(const pipeline::LayerError& layer) {
  Json j;
  j["node"] = layer.node;
  j["kind"] = layer.kind;
  j["output"] = layer.output;
  j["sqnr_accumulated_db"] = Number(layer.sqnr_accumulated);
  j["cosine_accumulated"] = Number(layer.cosine_accumulated);
  j["sqnr_isolated_db"] = Number(layer.sqnr_isolated);
  j["cosine_isolated"] = Number(layer.cosine_isolated);
  j["fallback_gain_db"] = Number(layer.fallback_gain_db);  // null unless --suggest_keep_float measured it
  return j;
}

Json CalibrationJson(const calib::CalibrationTable& table) {
  Json tensors = Json::array();
  for (const calib::TensorRange& t : table.tensors) {
    Json j;
    j["name"] = t.name;
    j["threshold"] = Number(t.threshold);
    j["scale"] = Number(t.scale);
    j["min"] = Number(t.min);
    j["max"] = Number(t.max);
    if (!t.method.empty()) j["method"] = t.method;
    if (!t.bounded_by.empty()) j["bounded_by"] = t.bounded_by;  // the saturating reader that lowered it
    tensors.push_back(std::move(j));
  }
  Json c;
  c["method"] = table.method;
  c["percentile"] = Number(table.percentile);
  c["samples"] = table.samples;
  c["fingerprint"] = table.fingerprint;
  c["tensors"] = std::move(tensors);
  return c;
}

Json LevelJson(const pipeline::LevelResult& level) {
  Json j;
  j["level"] = fusion::FusionLevelName(level.level);
  j["target"] = quant::DeployTargetName(level.target);
  j["activation_type"] = ActivationTypeName(level.convert.activation_type);
  j["int8_as_uint8"] = level.convert.int8_as_uint8;  // int8 grid stored as uint8 + 128
  j["unsigned_activations"] = level.conversion.unsigned_activations;  // zero point 0, T / 255
  j["integer_heads"] = level.conversion.integer_heads;  // units written as ConvInteger -> ... (count)
  j["reduce_range"] = level.convert.reduce_range;
  j["model_file"] = Basename(level.model_file);
  j["table_file"] = Basename(level.table_file);
  j["float_nodes"] = level.float_nodes;
  j["metrics"] = {{"top1", level.top1 < 0 ? Json(nullptr) : Number(level.top1)},
                  {"agreement", Number(level.agreement)},
                  {"sqnr_db", Number(level.sqnr_db)},
                  {"cosine", Number(level.cosine)},
                  {"max_abs_diff", Number(level.max_abs_diff)}};
  Json per_output = Json::array();
  for (const pipeline::OutputAgreement& o : level.outputs) {
    per_output.push_back({{"sqnr_db", Number(o.sqnr_db)},
                          {"cosine", Number(o.cosine)},
                          {"max_abs_diff", Number(o.max_abs_diff)},
                          {"agreement", Number(o.top1_agreement)},
                          {"median_sample_sqnr_db", Number(o.median_sample_sqnr_db)},
                          {"worst_sample", o.worst_sample},
                          {"worst_sample_name", o.worst_sample_name},
                          {"worst_sample_sqnr_db", Number(o.worst_sample_sqnr_db)},
                          {"worst_sample_error_share", Number(o.worst_sample_error_share)}});
  }
  j["outputs"] = std::move(per_output);
  j["conversion"] = {{"quantized_activations", level.conversion.quantized_activations},
                     {"quantized_weights", level.conversion.quantized_weights},
                     {"widened_bias_channels", level.conversion.widened_bias_channels},
                     {"float_ops", level.conversion.float_ops},
                     {"bias_float_layers", level.conversion.bias_float_layers},
                     {"notes", level.conversion.notes}};
  Json layers = Json::array();
  for (const pipeline::LayerError& layer : level.analysis.layers) layers.push_back(LayerJson(layer));
  j["layers"] = std::move(layers);
  j["layer_analysis_samples"] = level.analysis.samples;
  Json suggested = Json::array();
  for (const std::string& node : level.analysis.suggested_keep_float) suggested.push_back(node);
  j["keep_float_suggestion"] = {
      {"nodes", std::move(suggested)},
      {"output_sqnr_db", Number(level.analysis.output_sqnr_db)},
      {"output_sqnr_with_suggestion_db", Number(level.analysis.output_sqnr_with_suggestion_db)},
      {"output_sqnr_with_suggestion_on_eval_db", Number(level.suggestion_sqnr_db)},
      {"top1_with_suggestion", Number(level.suggestion_top1)},
      {"agreement_with_suggestion", Number(level.suggestion_agreement)}};
  j["calibration"] = CalibrationJson(level.table);
  return j;
}

}  // namespace

std::string SummaryTable(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config) {
  const SummaryGrid grid = BuildSummary(result, config);
  std::vector<size_t> widths(grid.header.size(), 0);
  for (size_t c = 0; c < grid.header.size(); ++c) widths[c] = grid.header[c].size();
  for (const auto& row : grid.rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) out += "  ";
      const std::string pad(widths[c] - cells[c].size(), ' ');
      out += c == 0 ? cells[c] + pad : pad + cells[c];  // names left, numbers right
    }
    out.erase(out.find_last_not_of(' ') + 1);
    return out + "\n";
  };
  std::string text = absl::StrFormat("%s: %d calibration samples (%s), %d evaluation samples\n", result.model_path,
                                     result.calib_samples, MethodDescription(config), result.eval_samples);
  text += line(grid.header);
  for (const auto& row : grid.rows) text += line(row);
  for (const std::string& note : grid.notes) absl::StrAppend(&text, note, "\n");
  return text;
}

std::string ReportJson(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config) {
  Json report;
  report["config"] = ConfigJson(result, config);
  report["fp32"] = {{"top1", result.fp32_top1 < 0 ? Json(nullptr) : Number(result.fp32_top1)}};
  Json levels = Json::array();
  for (const pipeline::LevelResult& level : result.levels) levels.push_back(LevelJson(level));
  report["levels"] = std::move(levels);
  // Names are written as given; invalid UTF-8 bytes become U+FFFD instead of throwing.
  return report.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

absl::Status WriteReports(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config, const std::string& json_path,
                          const std::string& html_path) {
  QFUSE_RETURN_IF_ERROR(base::WriteFileAtomically(json_path, ReportJson(result, config)));
  return base::WriteFileAtomically(html_path, ReportHtml(result, config));
}

}  // namespace qfuse::tools
