// Evaluation of a model on a dataset: its outputs, top-1 accuracy against labels, and
// agreement with a reference model's outputs (top-1 agreement, SQNR, cosine).
#ifndef QFUSE_PIPELINE_EVALUATION_H_
#define QFUSE_PIPELINE_EVALUATION_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace qfuse::pipeline {

struct EvaluateOptions {
  int64_t max_samples = 0;  // 0: the whole dataset
  // Samples per runtime batch; 0: as many as fit data::kDefaultBatchInputBytes of input, at
  // most 100 (a model with a fixed batch dim always takes that).
  int64_t batch_size = 0;
  runtime::ExecutorOptions executor;
  bool show_progress = true;
  const char* label = "evaluate";
};

// The graph's outputs over the dataset, each concatenated along the batch dim.
absl::StatusOr<std::vector<ir::Tensor>> RunOnDataset(const ir::Graph& graph, data::Dataset& data,
                                                     const EvaluateOptions& options);

// Share of rows of `logits` ([N, classes]) whose argmax equals the label, in percent.
absl::StatusOr<double> Top1Accuracy(const ir::Tensor& logits, const std::vector<int64_t>& labels);

struct OutputAgreement {
  double top1_agreement = 0;  // percent of rows with the same argmax (rank-2 outputs only, else NaN)
  double sqnr_db = 0;         // 10 log10(sum ref^2 / sum (ref - x)^2); +inf when identical
  double cosine = 0;          // of the flattened tensors
  double max_abs_diff = 0;
  // Per sample (dim 0): the median of each sample's SQNR, and the sample with the largest
  // squared error, its SQNR and its share of the whole squared error. One sample's output
  // can be orders of magnitude larger than the others' (an input outside what calibration
  // saw); the pooled SQNR above is then that sample's, and these say so.
  int64_t samples = 0;
  double median_sample_sqnr_db = std::numeric_limits<double>::quiet_NaN();
  int64_t worst_sample = -1;
  double worst_sample_sqnr_db = std::numeric_limits<double>::quiet_NaN();
  double worst_sample_error_share = 0;  // in [0, 1]
  std::string worst_sample_name;        // the dataset's name for it (set by the caller that knows the data)
};

// True when one sample carries most (> half) of the squared error of at least 4 samples:
// the pooled SQNR is then mostly that one sample's.
bool DominatedByOneSample(const OutputAgreement& agreement);

// Compares `actual` against `reference` (same shape, FLOAT).
absl::StatusOr<OutputAgreement> CompareOutputs(const ir::Tensor& reference, const ir::Tensor& actual);

// SQNR (dB) and cosine of two equally sized float spans.
double SqnrDb(absl::Span<const float> reference, absl::Span<const float> actual);
double Cosine(absl::Span<const float> a, absl::Span<const float> b);
// Both in one pass: the same values as SqnrDb and Cosine.
void SqnrAndCosine(absl::Span<const float> reference, absl::Span<const float> actual, double* sqnr_db, double* cosine);

}  // namespace qfuse::pipeline

#endif  // QFUSE_PIPELINE_EVALUATION_H_
