#include "pipeline/model_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "ir/onnx_import.h"

namespace qfuse::pipeline {
namespace {

struct ModelOutputs {
  std::vector<std::string> names;
  std::vector<ir::Tensor> tensors;
  int64_t samples = 0;
};

// A loaded model with its dataset, opened before anything runs so that a bad path or
// source fails fast.
struct LoadedModel {
  std::string path;
  ir::Model model;
  std::unique_ptr<data::Dataset> data;
  int64_t samples = 0;  // what RunOnDataset will read
  std::vector<std::string> outputs;
};

absl::StatusOr<LoadedModel> Load(const std::string& path, const CompareOptions& options) {
  LoadedModel m;
  m.path = path;
  QFUSE_ASSIGN_OR_RETURN(m.model, ir::LoadModel(path));
  absl::StatusOr<std::unique_ptr<data::Dataset>> data =
      data::OpenDataset(options.data, *m.model.graph, options.max_samples);
  if (!data.ok()) return absl::Status(data.status().code(), absl::StrCat(path, ": ", data.status().message()));
  m.data = *std::move(data);
  m.samples = options.max_samples > 0 ? std::min(options.max_samples, m.data->size()) : m.data->size();
  for (const ir::Value* v : m.model.graph->outputs()) m.outputs.push_back(v->name());
  return m;
}

absl::StatusOr<ModelOutputs> Run(LoadedModel& m, const char* label, const CompareOptions& options) {
  EvaluateOptions eval;
  eval.max_samples = options.max_samples;
  eval.executor = options.executor;
  eval.show_progress = options.show_progress;
  eval.label = label;
  absl::StatusOr<std::vector<ir::Tensor>> tensors = RunOnDataset(*m.model.graph, *m.data, eval);
  if (!tensors.ok()) return absl::Status(tensors.status().code(), absl::StrCat(m.path, ": ", tensors.status().message()));
  ModelOutputs out;
  out.tensors = *std::move(tensors);
  out.names = m.outputs;
  out.samples = m.samples;
  return out;
}

// For each output of A, the index of B's output it is compared with.
absl::StatusOr<std::vector<size_t>> MatchOutputs(const LoadedModel& a, const LoadedModel& b) {
  std::map<std::string, size_t> b_index;
  for (size_t i = 0; i < b.outputs.size(); ++i) b_index[b.outputs[i]] = i;
  std::vector<size_t> match;
  for (const std::string& name : a.outputs) {
    auto it = b_index.find(name);
    if (it == b_index.end()) break;
    match.push_back(it->second);
  }
  if (match.size() == a.outputs.size()) return match;
  if (a.outputs.size() != b.outputs.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model B lacks output '%s' and the models have %d vs %d outputs, so they cannot be matched by position",
        a.outputs[match.size()], a.outputs.size(), b.outputs.size()));
  }
  match.clear();
  for (size_t i = 0; i < a.outputs.size(); ++i) match.push_back(i);
  return match;
}

std::string Fixed(double value, int decimals) {
  if (std::isnan(value)) return "n/a";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.*f", decimals, value);
}

}  // namespace

absl::StatusOr<ComparisonReport> CompareModels(const CompareOptions& options) {
  QFUSE_ASSIGN_OR_RETURN(LoadedModel model_a, Load(options.model_a, options));
  QFUSE_ASSIGN_OR_RETURN(LoadedModel model_b, Load(options.model_b, options));
  if (model_a.samples != model_b.samples) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data gives model A ", model_a.samples, " samples, model B ", model_b.samples));
  }
  std::vector<int64_t> labels;
  if (!options.labels_path.empty()) {
    QFUSE_ASSIGN_OR_RETURN(labels, data::ReadIdxLabels(options.labels_path));
    if (static_cast<int64_t>(labels.size()) < model_a.samples) {
      return absl::InvalidArgumentError(
          absl::StrCat(options.labels_path, ": ", labels.size(), " labels for ", model_a.samples, " samples"));
    }
  }
  QFUSE_ASSIGN_OR_RETURN(std::vector<size_t> match, MatchOutputs(model_a, model_b));
  QFUSE_ASSIGN_OR_RETURN(ModelOutputs a, Run(model_a, "model A", options));
  QFUSE_ASSIGN_OR_RETURN(ModelOutputs b, Run(model_b, "model B", options));
  ComparisonReport report;
  report.samples = a.samples;
  for (size_t i = 0; i < a.names.size(); ++i) {
    const ir::Tensor& ta = a.tensors[i];
    const ir::Tensor& tb = b.tensors[match[i]];
    OutputComparison c;
    c.name_a = a.names[i];
    c.name_b = b.names[match[i]];
    c.dims = ta.dims();
    if (ta.dtype() != ir::DataType::kFloat32 || tb.dtype() != ir::DataType::kFloat32) {
      c.skipped = absl::StrCat("not FLOAT (", ir::DataTypeName(ta.dtype()), " vs ", ir::DataTypeName(tb.dtype()), ")");
      report.outputs.push_back(std::move(c));
      continue;
    }
    absl::StatusOr<OutputAgreement> agreement = CompareOutputs(ta, tb);
    if (!agreement.ok()) {
      return absl::Status(agreement.status().code(), absl::StrCat("output '", c.name_a, "': ", agreement.status().message()));
    }
    c.agreement = *agreement;
    if (!labels.empty() && ta.rank() == 2) {
      QFUSE_ASSIGN_OR_RETURN(c.top1_a, Top1Accuracy(ta, labels));
      QFUSE_ASSIGN_OR_RETURN(c.top1_b, Top1Accuracy(tb, labels));
    }
    report.outputs.push_back(std::move(c));
  }
  return report;
}

std::string FormatComparison(const ComparisonReport& report, const CompareOptions& options) {
  std::string text = absl::StrFormat("model A (reference): %s\nmodel B: %s\n%d samples\n", options.model_a,
                                     options.model_b, report.samples);
  const bool labels = !options.labels_path.empty();
  absl::StrAppendFormat(&text, "%-24s %-16s %9s %9s %9s %12s", "output", "shape", "top-1 =%", "SQNR dB", "cosine",
                        "max |a-b|");
  if (labels) absl::StrAppendFormat(&text, " %9s %9s", "top-1 A%", "top-1 B%");
  text += "\n";
  for (const OutputComparison& c : report.outputs) {
    std::string name = c.name_a == c.name_b ? c.name_a : absl::StrCat(c.name_a, " / ", c.name_b);
    absl::StrAppendFormat(&text, "%-24s %-16s", name, ir::DimsToString(c.dims));
    if (!c.skipped.empty()) {
      absl::StrAppend(&text, " skipped: ", c.skipped, "\n");
      continue;
    }
    const OutputAgreement& g = c.agreement;
    absl::StrAppendFormat(&text, " %9s %9s %9s %12s", Fixed(g.top1_agreement, 2), Fixed(g.sqnr_db, 2),
                          Fixed(g.cosine, 6), absl::StrFormat("%.6g", g.max_abs_diff));
    if (labels) {
      absl::StrAppendFormat(&text, " %9s %9s", c.top1_a < 0 ? "n/a" : Fixed(c.top1_a, 2),
                            c.top1_b < 0 ? "n/a" : Fixed(c.top1_b, 2));
    }
    text += "\n";
  }
  return text;
}

}  // namespace qfuse::pipeline
