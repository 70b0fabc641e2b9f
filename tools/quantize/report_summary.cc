#include "tools/quantize/report_summary.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "calib/thresholds.h"
#include "fusion/pipeline.h"

namespace qfuse::tools {
namespace {

constexpr char kNotApplicable[] = "-";

std::string SecondsCell(double seconds) { return FormatFixed(seconds, 3); }

// Where a later level beats the first one run (full, by default) on the evaluation set: output
// SQNR above by more than the printed precision and, with labels, top-1 not below. The best such
// level; "" if none.
std::string BestLevelNote(const pipeline::QuantizeResult& result) {
  if (result.levels.size() < 2) return "";
  const bool labels = result.fp32_top1 >= 0;
  const pipeline::LevelResult& first = result.levels[0];
  const pipeline::LevelResult* best = &first;
  for (const pipeline::LevelResult& level : result.levels) {
    if (level.sqnr_db > best->sqnr_db + 0.005 && (!labels || level.top1 >= first.top1)) best = &level;
  }
  if (best == &first) return "";
  return absl::StrFormat(
      "%s is more accurate than %s on this evaluation set (SQNR %s against %s dB%s): compare the levels on data "
      "like yours before choosing a file (%s)",
      pipeline::ResultName(*best), pipeline::ResultName(first), FormatFixed(best->sqnr_db, 2),
      FormatFixed(first.sqnr_db, 2),
      labels ? absl::StrCat(", top-1 ", Top1Cell(best->top1), "% against ", Top1Cell(first.top1), "%") : "",
      best->model_file);
}

}  // namespace

std::string Top1Cell(double top1) { return top1 < 0 ? "n/a" : FormatFixed(top1, 2); }

std::string SuggestionAgreementText(const pipeline::LevelResult& level, const std::string& separator,
                                    const std::string& agreement_label) {
  if (std::isnan(level.suggestion_agreement)) return "";
  return absl::StrCat(separator, "top-1 ", Top1Cell(level.suggestion_top1), "%, agreement ", agreement_label,
                      FormatFixed(level.suggestion_agreement, 2), "%");
}

std::string FormatFixed(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.*f", decimals, value);
}

std::string MethodDescription(const pipeline::QuantizeConfig& config) {
  std::string method(calib::CalibrationMethodName(config.threshold.method));
  if (config.threshold.method == calib::CalibrationMethod::kPercentile) {
    absl::StrAppend(&method, " ", absl::StrFormat("%g", config.threshold.percentile));
  }
  if (config.activation_headroom != 1.0) {
    absl::StrAppend(&method, ", thresholds x ", absl::StrFormat("%g", config.activation_headroom));
  }
  return method;
}

SummaryGrid BuildSummary(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config) {
  SummaryGrid grid;
  grid.header = {"level",  "top-1 %", "agree %", "SQNR dB", "cosine",  "nodes",    "q acts", "float ops",
                 "load s", "fuse s",  "calib s", "conv s",  "eval s",  "analyze s"};
  std::vector<std::string> fp32(grid.header.size(), kNotApplicable);
  fp32[0] = "fp32";
  fp32[1] = Top1Cell(result.fp32_top1);
  grid.rows.push_back(fp32);
  for (const pipeline::LevelResult& level : result.levels) {
    const std::string agree = std::isnan(level.agreement) ? kNotApplicable : FormatFixed(level.agreement, 2);
    grid.rows.push_back({pipeline::ResultName(level), Top1Cell(level.top1), agree,
                         FormatFixed(level.sqnr_db, 2), FormatFixed(level.cosine, 5),
                         absl::StrCat(level.float_nodes), absl::StrCat(level.conversion.quantized_activations),
                         absl::StrCat(level.conversion.float_ops), SecondsCell(level.seconds.load),
                         SecondsCell(level.seconds.fuse), SecondsCell(level.seconds.calibrate),
                         SecondsCell(level.seconds.convert), SecondsCell(level.seconds.evaluate),
                         SecondsCell(level.seconds.analyze)});
  }
  grid.notes.push_back(absl::StrFormat("fp32 evaluation: %s s (%d samples)", SecondsCell(result.fp32_seconds),
                                       result.eval_samples));
  if (result.fp32_top1 < 0) {
    grid.notes.push_back("no labels: top-1 is n/a; accuracy is the top-1 agreement with fp32 (agree %)");
  }
  for (const pipeline::LevelResult& level : result.levels) {
    // Dense or several outputs: each output's error, since top-1 agreement does not apply.
    if (level.outputs.size() < 2 && !std::isnan(level.agreement)) continue;
    for (size_t k = 0; k < level.outputs.size(); ++k) {
      const pipeline::OutputAgreement& o = level.outputs[k];
      grid.notes.push_back(absl::StrFormat("%s: output %d: SQNR %s dB (median per sample %s), cosine %s, max|diff| %s",
                                           pipeline::ResultName(level), k, FormatFixed(o.sqnr_db, 2),
                                           FormatFixed(o.median_sample_sqnr_db, 2), FormatFixed(o.cosine, 5),
                                           FormatFixed(o.max_abs_diff, 4)));
    }
  }
  for (const pipeline::LevelResult& level : result.levels) {
    for (size_t k = 0; k < level.outputs.size(); ++k) {
      const pipeline::OutputAgreement& o = level.outputs[k];
      if (!pipeline::DominatedByOneSample(o)) continue;
      grid.notes.push_back(absl::StrFormat(
          "%s: output %d: %s carries %d%% of the squared error (its SQNR %s dB, median over the %d samples "
          "%s dB), so the SQNR above is mostly that sample's: check whether inputs like it are in --calib_data",
          pipeline::ResultName(level), k,
          o.worst_sample_name.empty() ? absl::StrCat("evaluation sample ", o.worst_sample) : o.worst_sample_name,
          static_cast<int>(std::lround(100 * o.worst_sample_error_share)), FormatFixed(o.worst_sample_sqnr_db, 2),
          o.samples, FormatFixed(o.median_sample_sqnr_db, 2)));
    }
  }
  if (const std::string best = BestLevelNote(result); !best.empty()) grid.notes.push_back(best);
  for (const pipeline::LevelResult& level : result.levels) {
    const pipeline::LayerAnalysis& a = level.analysis;
    if (a.suggested_keep_float.empty()) continue;
    // The analysis' figures are on its own samples, the table's on the evaluation set: both.
    grid.notes.push_back(absl::StrFormat(
        "%s: keep float %s -> output SQNR %s dB on the %d analysis samples (all int8: %s dB), %s dB on the "
        "evaluation set (all int8: %s dB)%s",
        pipeline::ResultName(level), absl::StrJoin(a.suggested_keep_float, ", "),
        FormatFixed(a.output_sqnr_with_suggestion_db, 2), a.samples, FormatFixed(a.output_sqnr_db, 2),
        FormatFixed(level.suggestion_sqnr_db, 2), FormatFixed(level.sqnr_db, 2),
        SuggestionAgreementText(level, ", ", "")));
    // (Below by more than the printed precision.)
    if (level.suggestion_sqnr_db < level.sqnr_db - 0.005) {
      grid.notes.push_back(absl::StrFormat(
          "%s: the suggestion lowers the evaluation set's SQNR: chosen on %d analysis samples (int8 simulated "
          "in float), it does not carry over (try more --analysis_samples, or keep every layer int8)",
          pipeline::ResultName(level), a.samples));
    }
  }
  return grid;
}

}  // namespace qfuse::tools
