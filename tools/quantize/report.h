// The quantize job's reports: the summary table printed to stdout, report.json, and a
// self-contained report.html (inline SVG charts, no network) readable without a server.
#ifndef QFUSE_TOOLS_QUANTIZE_REPORT_H_
#define QFUSE_TOOLS_QUANTIZE_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "pipeline/quantize_pipeline.h"

namespace qfuse::tools {

// The table printed at the end of a run: fp32 top-1, int8 top-1 per level, logits SQNR
// and cosine per level, time per phase.
std::string SummaryTable(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config);

// Everything the run measured except wall times (so reruns give the same bytes):
// config, per level the files written, accuracy, SQNR/cosine, conversion statistics,
// per-layer errors worst first, keep-float suggestions, and per tensor the calibration
// threshold next to its observed min/max.
std::string ReportJson(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config);

// One self-contained HTML page: the summary table, per-unit SQNR of each fusion level as
// inline SVG bar charts, the per-layer table, and the calibration thresholds next to each
// tensor's min/max. Deterministic (no timestamps).
std::string ReportHtml(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config);

// Writes both files atomically.
absl::Status WriteReports(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config, const std::string& json_path,
                          const std::string& html_path);

}  // namespace qfuse::tools

#endif  // QFUSE_TOOLS_QUANTIZE_REPORT_H_
