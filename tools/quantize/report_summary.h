// The summary of a quantize run as a grid of formatted cells, shared by the plain-text
// table (SummaryTable) and the HTML report, plus the number formats both use.
#ifndef QFUSE_TOOLS_QUANTIZE_REPORT_SUMMARY_H_
#define QFUSE_TOOLS_QUANTIZE_REPORT_SUMMARY_H_

#include <string>
#include <vector>

#include "pipeline/quantize_pipeline.h"

namespace qfuse::tools {

struct SummaryGrid {
  std::vector<std::string> header;             // column titles
  std::vector<std::vector<std::string>> rows;  // fp32, then one row per level
  std::vector<std::string> notes;              // lines printed under the table
};

// Rows: fp32 and each level of `result`: top-1 (%), top-1 agreement with fp32 (%), logits
// SQNR (dB), cosine, nodes, quantized activations, float ops, seconds per phase. Cells
// that do not apply are "-"; top-1 without labels is "n/a". Notes: the fp32 evaluation
// time, the no-labels remark, a level more accurate than the first one run (higher SQNR and,
// with labels, top-1 not lower), and the keep-float suggestions.
SummaryGrid BuildSummary(const pipeline::QuantizeResult& result, const pipeline::QuantizeConfig& config);

// "%.*f" for finite values; "inf" / "-inf" / "nan" otherwise.
std::string FormatFixed(double value, int decimals);
// A top-1 percentage with two decimals, or "n/a" when unknown (negative).
std::string Top1Cell(double top1);
// "<sep>top-1 X%, agreement <label>Y%" with the suggested layers kept float; "" when the output
// has no top-1 agreement (NaN: dense or sequence outputs).
std::string SuggestionAgreementText(const pipeline::LevelResult& level, const std::string& separator,
                                    const std::string& agreement_label);

// "entropy", "percentile 99.99", ...
std::string MethodDescription(const pipeline::QuantizeConfig& config);

}  // namespace qfuse::tools

#endif  // QFUSE_TOOLS_QUANTIZE_REPORT_SUMMARY_H_
