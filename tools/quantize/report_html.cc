// ReportHtml: one self-contained page (inline CSS and SVG, no script, no external URL).
#include "tools/quantize/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fusion/pipeline.h"
#include "tools/quantize/report_summary.h"

namespace qfuse::tools {
namespace {

constexpr char kStyle[] = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       margin: 24px auto; max-width: 1200px; padding: 0 16px; font-size: 14px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 15px; margin-top: 20px; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 13px; }
p.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; }
th { background: #f2f4f7; text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12px; word-break: break-all; }
tr.keep td { background: #fff4e0; }
ul.notes { color: #444; }
span.bar { display: inline-block; width: 120px; height: 10px; background: #eee; vertical-align: middle; }
span.bar span { display: block; height: 10px; background: #4a6fa5; }
span.bar span.clip { background: #d9822b; }
span.bar span.bound { background: #8a9bb0; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 12px; }
svg text.value { font-variant-numeric: tabular-nums; }
.none { color: #777; font-style: italic; }
)css";

// SQNR bar colours: below kPoorDb red, below kFairDb amber, else green.
constexpr double kPoorDb = 20;
constexpr double kFairDb = 30;

// Chart geometry, in SVG user units (pixels).
constexpr int kChartWidth = 1000;
constexpr int kLabelWidth = 400;   // node name and kind, right-aligned before the bars
constexpr int kBarAreaWidth = 480;
constexpr int kHeaderHeight = 50;  // legend and axis labels
constexpr int kRowHeight = 26;
constexpr int kAccBarHeight = 12;
constexpr int kIsoBarHeight = 6;
constexpr size_t kMaxLabelChars = 56;
constexpr double kAxisStepDb = 10;

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Shortens `text` to kMaxLabelChars bytes with a trailing "...", never splitting a UTF-8 sequence.
std::string Shorten(const std::string& text) {
  if (text.size() <= kMaxLabelChars) return text;
  size_t cut = kMaxLabelChars - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

std::string Number6(float value) { return std::isfinite(value) ? absl::StrFormat("%.6g", value) : "n/a"; }

const char* SqnrColor(double db) {
  if (db < kPoorDb) return "#d9534f";
  if (db < kFairDb) return "#f0ad4e";
  return "#5cb85c";
}

// Axis maximum: the largest finite SQNR rounded up to a multiple of kAxisStepDb (at least one step).
double AxisMaxDb(const std::vector<pipeline::LayerError>& layers) {
  double top = kAxisStepDb;
  for (const pipeline::LayerError& l : layers) {
    for (double db : {l.sqnr_accumulated, l.sqnr_isolated}) {
      if (std::isfinite(db)) top = std::max(top, db);
    }
  }
  return std::ceil(top / kAxisStepDb) * kAxisStepDb;
}

// Bar length for `db` on an axis of `axis_max` dB: negative and NaN clamp to 0, +inf to full.
double BarLength(double db, double axis_max) {
  if (std::isnan(db) || db <= 0) return 0;
  if (std::isinf(db)) return kBarAreaWidth;
  return std::min(1.0, db / axis_max) * kBarAreaWidth;
}

// Horizontal bars of per-unit SQNR, in the order given (worst accumulated first): a thick
// bar for the accumulated SQNR (whole model int8) and a thin one for the isolated SQNR
// (only that layer int8).
std::string SqnrChart(const pipeline::LevelResult& level) {
  const std::vector<pipeline::LayerError>& layers = level.analysis.layers;
  const double axis_max = AxisMaxDb(layers);
  const int height = kHeaderHeight + kRowHeight * static_cast<int>(layers.size()) + 8;
  const int x0 = kLabelWidth + 8;
  std::string svg = absl::StrFormat(
      "<svg class=\"sqnr-chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
      "aria-label=\"per-unit SQNR, fusion level %s\">\n",
      kChartWidth, height, kChartWidth, height, pipeline::ResultName(level));
  // Legend, above the labels: the accumulated bar's three colours, then the isolated bar.
  const int lx = 8;
  const double legend_db[] = {kPoorDb - 1, kFairDb - 1, kFairDb};
  for (int k = 0; k < 3; ++k) {
    absl::StrAppendFormat(&svg, "<rect x=\"%d\" y=\"4\" width=\"8\" height=\"%d\" fill=\"%s\"/>", lx + 9 * k,
                          kAccBarHeight, SqnrColor(legend_db[k]));
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%d\" y=\"15\">accumulated SQNR, whole model int8 (&lt;%g, &lt;%g, &gt;=%g dB)</text>\n"
                        "<rect x=\"%d\" y=\"7\" width=\"26\" height=\"%d\" fill=\"#4a6fa5\"/>"
                        "<text x=\"%d\" y=\"15\">isolated SQNR, only this layer int8</text>\n",
                        lx + 32, kPoorDb, kFairDb, kFairDb, lx + 400, kIsoBarHeight, lx + 432);
  // Axis: a grid line and label every kAxisStepDb.
  const int grid_bottom = height - 8;
  for (double db = 0; db <= axis_max + 1e-9; db += kAxisStepDb) {
    const double x = x0 + BarLength(db, axis_max);
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">%g</text>\n",
                          x, kHeaderHeight - 8, x, grid_bottom, x, kHeaderHeight - 12, db);
  }
  absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\" fill=\"#666\">dB</text>\n", x0 + kBarAreaWidth + 14,
                        kHeaderHeight - 12);
  for (size_t i = 0; i < layers.size(); ++i) {
    const pipeline::LayerError& l = layers[i];
    const int y = kHeaderHeight + kRowHeight * static_cast<int>(i);
    const std::string label = absl::StrCat(l.node, " (", l.kind, ")");
    absl::StrAppendFormat(
        &svg,
        "<g><title>%s: accumulated %s dB, isolated %s dB</title>"
        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>"
        "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
        "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#4a6fa5\"/>"
        "<text class=\"value\" x=\"%d\" y=\"%d\">%s / %s dB</text></g>\n",
        Escape(label), FormatFixed(l.sqnr_accumulated, 2), FormatFixed(l.sqnr_isolated, 2), kLabelWidth,
        y + kAccBarHeight + 2, Escape(Shorten(label)), x0, y + 2, BarLength(l.sqnr_accumulated, axis_max),
        kAccBarHeight, SqnrColor(l.sqnr_accumulated), x0, y + 4 + kAccBarHeight,
        BarLength(l.sqnr_isolated, axis_max), kIsoBarHeight, x0 + kBarAreaWidth + 8, y + kAccBarHeight + 2,
        FormatFixed(l.sqnr_accumulated, 1), FormatFixed(l.sqnr_isolated, 1));
  }
  svg += "</svg>\n";
  return svg;
}

std::string SummaryHtml(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config) {
  const SummaryGrid grid = BuildSummary(result, config);
  std::string html = "<table class=\"summary\" id=\"summary\">\n<tr>";
  for (const std::string& h : grid.header) absl::StrAppend(&html, "<th>", Escape(h), "</th>");
  html += "</tr>\n";
  for (const auto& row : grid.rows) {
    html += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) {
      absl::StrAppend(&html, c == 0 ? "<td>" : "<td class=\"num\">", Escape(row[c]), "</td>");
    }
    html += "</tr>\n";
  }
  html += "</table>\n<ul class=\"notes\">\n";
  for (const std::string& note : grid.notes) absl::StrAppend(&html, "<li>", Escape(note), "</li>\n");
  html += "</ul>\n";
  return html;
}

std::string LayerTable(const pipeline::LevelResult& level) {
  const pipeline::LayerAnalysis& a = level.analysis;
  std::string html =
      "<table class=\"layers\">\n<tr><th>#</th><th>node</th><th>kind</th><th>output</th>"
      "<th>SQNR acc. dB</th><th>cosine acc.</th><th>SQNR iso. dB</th><th>cosine iso.</th></tr>\n";
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const pipeline::LayerError& l = a.layers[i];
    const bool keep = std::find(a.suggested_keep_float.begin(), a.suggested_keep_float.end(), l.node) !=
                      a.suggested_keep_float.end();
    absl::StrAppendFormat(&html,
                          "<tr%s><td class=\"num\">%d</td><td class=\"name\">%s</td><td>%s</td>"
                          "<td class=\"name\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                          "<td class=\"num\">%s</td><td class=\"num\">%s</td></tr>\n",
                          keep ? " class=\"keep\"" : "", i + 1, Escape(l.node), Escape(l.kind), Escape(l.output),
                          FormatFixed(l.sqnr_accumulated, 2), FormatFixed(l.cosine_accumulated, 5),
                          FormatFixed(l.sqnr_isolated, 2), FormatFixed(l.cosine_isolated, 5));
  }
  html += "</table>\n";
  return html;
}

std::string SuggestionHtml(const pipeline::LevelResult& level) {
  const pipeline::LayerAnalysis& a = level.analysis;
  if (a.suggested_keep_float.empty()) {
    return "<p class=\"none\">No keep-float suggestion (run with --suggest_keep_float=N to get one).</p>\n";
  }
  std::string html = absl::StrFormat(
      "<p>Keeping these nodes in float takes the output SQNR from %s dB to %s dB on the %d analysis samples, "
      "from %s dB to %s dB on the evaluation set%s (pass them to --keep_float):</p>\n<ol>\n",
      FormatFixed(a.output_sqnr_db, 2), FormatFixed(a.output_sqnr_with_suggestion_db, 2), a.samples,
      FormatFixed(level.sqnr_db, 2), FormatFixed(level.suggestion_sqnr_db, 2),
      SuggestionAgreementText(level, "; ", "with fp32 "));
  for (const std::string& node : a.suggested_keep_float) {
    absl::StrAppend(&html, "<li><code>", Escape(node), "</code></li>\n");
  }
  html += "</ol>\n";
  return html;
}

std::string ThresholdTable(const calib::CalibrationTable& table) {
  std::string html = absl::StrFormat(
      "<p class=\"meta\">method %s, %d samples; a threshold below max|x| clips (orange bar: share of max|x| "
      "kept; grey: lowered to the bound of the saturating ops that read the tensor, past which their outputs "
      "barely change)</p>\n<table class=\"thresholds\">\n<tr><th>tensor</th><th>min</th><th>max</th><th>threshold</th>"
      "<th>scale</th><th>threshold / max|x|</th><th></th></tr>\n",
      Escape(table.method.empty() ? "unknown" : table.method), table.samples);
  for (const calib::TensorRange& t : table.tensors) {
    const double max_abs = std::max(std::fabs(static_cast<double>(t.min)), std::fabs(static_cast<double>(t.max)));
    std::string percent = "n/a", bar;
    if (std::isfinite(max_abs) && max_abs > 0) {
      const double share = 100.0 * t.threshold / max_abs;
      percent = absl::StrCat(FormatFixed(share, 1), " %");
      const char* kind = share < 100 - 1e-6 ? " class=\"clip\"" : "";
      if (!t.bounded_by.empty()) {
        absl::StrAppend(&percent, ", ", Escape(t.bounded_by), "'s bound");
        kind = " class=\"bound\"";
      }
      bar = absl::StrFormat("<span class=\"bar\"><span%s style=\"width:%.1f%%\"></span></span>", kind,
                            std::min(100.0, share));
    }
    absl::StrAppendFormat(&html,
                          "<tr><td class=\"name\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                          "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                          "<td>%s</td></tr>\n",
                          Escape(t.name), Number6(t.min), Number6(t.max), Number6(t.threshold), Number6(t.scale),
                          percent, bar);
  }
  html += "</table>\n";
  return html;
}

std::string LevelSection(const pipeline::LevelResult& level) {
  const std::string name = pipeline::ResultName(level);
  std::string html = absl::StrFormat("<section id=\"level-%s\">\n<h2>Fusion level %s</h2>\n", name, name);
  absl::StrAppendFormat(&html, "<p class=\"meta\">target %s: %s activations, %s%s weights</p>\n",
                        quant::DeployTargetName(level.target),
                        level.convert.activation_type == quant::ActivationType::kUint8 ? "uint8" : "int8",
                        level.convert.per_channel_weights ? "per-channel" : "per-tensor",
                        level.convert.reduce_range ? " 7-bit" : "");
  absl::StrAppendFormat(&html,
                        "<p class=\"meta\">int8 model <code>%s</code>, calibration table <code>%s</code>; "
                        "%d float nodes, %d quantized activations, %d quantized weights, %d float ops</p>\n",
                        Escape(std::filesystem::path(level.model_file).filename().string()),
                        Escape(std::filesystem::path(level.table_file).filename().string()), level.float_nodes,
                        level.conversion.quantized_activations, level.conversion.quantized_weights,
                        level.conversion.float_ops);
  html += "<h3>Per-unit SQNR, worst first</h3>\n";
  if (level.analysis.layers.empty()) {
    html += "<p class=\"none\">No per-layer analysis (--analysis_samples=0).</p>\n";
  } else {
    html += SqnrChart(level);
    html += "<h3>Per-layer errors</h3>\n";
    html += LayerTable(level);
  }
  html += "<h3>Keep-float suggestion</h3>\n";
  html += SuggestionHtml(level);
  html += "<h3>Calibration thresholds</h3>\n";
  html += ThresholdTable(level.table);
  html += "</section>\n";
  return html;
}

}  // namespace

std::string ReportHtml(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  absl::StrAppend(&html, "<title>qfuse int8 report: ", Escape(result.model_path), "</title>\n<style>", kStyle,
                  "</style>\n</head>\n<body>\n");
  absl::StrAppend(&html, "<h1>qfuse int8 quantization report</h1>\n<p class=\"meta\">model <code>",
                  Escape(result.model_path), "</code> &middot; ",
                  absl::StrFormat("%d calibration samples (%s) &middot; %d evaluation samples &middot; ",
                                  result.calib_samples, Escape(MethodDescription(config)), result.eval_samples),
                  config.convert.activation_type == quant::ActivationType::kUint8 ? "uint8" : "int8",
                  " activations &middot; ",
                  config.convert.per_channel_weights ? "per-channel" : "per-tensor",
                  config.convert.reduce_range ? " 7-bit" : "", " weights</p>\n");
  html += "<h2>Summary</h2>\n";
  html += SummaryHtml(result, config);
  for (const pipeline::LevelResult& level : result.levels) html += LevelSection(level);
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace qfuse::tools
