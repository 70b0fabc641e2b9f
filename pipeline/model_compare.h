// Compares two models' outputs on the same dataset (what //tools:compare prints): per
// output the top-1 agreement, SQNR, cosine and max |a - b| of model B against model A, and
// each model's top-1 accuracy when labels are given.
#ifndef QFUSE_PIPELINE_MODEL_COMPARE_H_
#define QFUSE_PIPELINE_MODEL_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/data_source.h"
#include "pipeline/evaluation.h"

namespace qfuse::pipeline {

struct CompareOptions {
  std::string model_a;                    // the reference
  std::string model_b;
  std::vector<data::DataSource> data;    // one source per model input
  int64_t max_samples = 0;                // 0: all
  std::string labels_path;                // IDX labels; "": no accuracy
  runtime::ExecutorOptions executor;
  bool show_progress = false;
};

struct OutputComparison {
  std::string name_a, name_b;  // equal unless the outputs were matched by position
  std::vector<int64_t> dims;   // of model A's output over all samples
  std::string skipped;         // why it was not compared (not FLOAT in both); "" when compared
  OutputAgreement agreement;   // model B against model A
  double top1_a = -1, top1_b = -1;  // percent; -1 without labels or for non-[N, classes] outputs
};

struct ComparisonReport {
  int64_t samples = 0;
  std::vector<OutputComparison> outputs;  // in model A's output order
};

// Outputs are matched by name when model B has every output name of model A, else by
// position when both have the same number of outputs. Each model reads the dataset
// through its own inputs (so both must accept the same sources). Outputs that are not
// FLOAT in both models are skipped (with the reason). Fails on differently shaped FLOAT
// outputs, or fewer labels than samples.
absl::StatusOr<ComparisonReport> CompareModels(const CompareOptions& options);

// Plain-text table of `report`, one row per output.
std::string FormatComparison(const ComparisonReport& report, const CompareOptions& options);

}  // namespace qfuse::pipeline

#endif  // QFUSE_PIPELINE_MODEL_COMPARE_H_
