#include "pipeline/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "calib/progress.h"

namespace qfuse::pipeline {
namespace {

// Index of the largest value in row `i` of a [rows, classes] span.
int64_t ArgMaxRow(absl::Span<const float> values, int64_t i, int64_t classes) {
  auto row = values.subspan(i * classes, classes);
  return std::max_element(row.begin(), row.end()) - row.begin();
}

// Sums over two equally sized float spans, in double: a^2, b^2, a * b and (a - b)^2. Element i
// goes to partial sum i % 8 of each, and the eight are added pairwise at the end: independent
// chains (one long chain ran at one add per four cycles, a tenth of the per-layer analysis).
// Spans of different sizes give NaN sums (and NaN figures), not a silent truncation.
struct PairSums {
  double aa = 0, bb = 0, ab = 0, dd = 0;
};
PairSums SumPairs(absl::Span<const float> a, absl::Span<const float> b) {
  constexpr size_t kLanes = 8;
  if (a.size() != b.size()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan, nan, nan};
  }
  double aa[kLanes] = {}, bb[kLanes] = {}, ab[kLanes] = {}, dd[kLanes] = {};
  const size_t n = a.size();
  for (size_t i = 0; i < n; i += kLanes) {
    const size_t lanes = std::min(kLanes, n - i);
    for (size_t l = 0; l < lanes; ++l) {
      const double x = a[i + l], y = b[i + l], d = x - y;
      aa[l] += x * x;
      bb[l] += y * y;
      ab[l] += x * y;
      dd[l] += d * d;
    }
  }
  const auto total = [](const double* s) { return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); };
  return {total(aa), total(bb), total(ab), total(dd)};
}

double SqnrOf(const PairSums& s) {
  if (s.dd == 0) return std::numeric_limits<double>::infinity();
  return 10 * std::log10(s.aa / s.dd);
}

double CosineOf(const PairSums& s) {
  if (s.aa == 0 && s.bb == 0) return 1;
  if (s.aa == 0 || s.bb == 0) return 0;
  return s.ab / std::sqrt(s.aa * s.bb);
}

// Fills the per-sample fields of `a` for `samples` equal slices of `reference`/`actual`.
void PerSampleAgreement(absl::Span<const float> reference, absl::Span<const float> actual, int64_t samples,
                        OutputAgreement* a) {
  const int64_t per_sample = static_cast<int64_t>(reference.size()) / samples;
  std::vector<double> sqnr(samples);
  std::vector<double> error(samples, 0.0);
  double total_error = 0;
  for (int64_t i = 0; i < samples; ++i) {
    const PairSums sums =
        SumPairs(reference.subspan(i * per_sample, per_sample), actual.subspan(i * per_sample, per_sample));
    error[i] = sums.dd;
    sqnr[i] = SqnrOf(sums);
    total_error += error[i];
  }
  a->samples = samples;
  const int64_t worst = std::max_element(error.begin(), error.end()) - error.begin();
  a->worst_sample = worst;
  a->worst_sample_sqnr_db = sqnr[worst];
  a->worst_sample_error_share = total_error > 0 ? error[worst] / total_error : 0;
  // Median: the mean of the two middle values for an even count (+inf when one of them is:
  // a sample without error has SQNR +inf).
  std::vector<double> sorted = sqnr;
  std::sort(sorted.begin(), sorted.end());
  const double lo = sorted[(samples - 1) / 2], hi = sorted[samples / 2];
  a->median_sample_sqnr_db = lo == hi ? lo : 0.5 * (lo + hi);
}

}  // namespace

absl::StatusOr<std::vector<ir::Tensor>> RunOnDataset(const ir::Graph& graph, data::Dataset& data,
                                                     const EvaluateOptions& options) {
  const int64_t total = options.max_samples > 0 ? std::min(options.max_samples, data.size()) : data.size();
  if (total <= 0) return absl::InvalidArgumentError("evaluation dataset has no samples");
  QFUSE_ASSIGN_OR_RETURN(auto exec, runtime::Executor::Create(graph, options.executor));
  std::vector<ir::Tensor> results;
  std::vector<int64_t> filled;
  std::unique_ptr<calib::ProgressBar> progress;
  if (options.show_progress) progress = std::make_unique<calib::ProgressBar>(options.label, total);
  int64_t batch = data.fixed_batch() > 0 ? data.fixed_batch() : options.batch_size;
  if (batch < 0) return absl::InvalidArgumentError(absl::StrCat("batch size must be positive or 0, got ", batch));
  if (batch == 0) {
    QFUSE_ASSIGN_OR_RETURN(batch, data::BatchWithinInputBytes(data, 100, data::kDefaultBatchInputBytes));
  }
  for (int64_t start = 0; start < total; start += batch) {
    const int64_t count = std::min(batch, total - start);
    QFUSE_ASSIGN_OR_RETURN(std::vector<ir::NamedTensor> inputs, data.ReadBatch(start, count));
    absl::StatusOr<std::vector<ir::NamedTensor>> outputs = exec->Run(inputs);
    if (!outputs.ok()) {
      return absl::Status(outputs.status().code(), absl::StrCat("samples ", start, "..", start + count - 1, " (",
                                                                data.DescribeSample(start), "): ",
                                                                outputs.status().message()));
    }
    if (results.empty()) {
      for (const ir::NamedTensor& out : *outputs) {
        std::vector<int64_t> dims = out.tensor.dims();
        if (dims.empty() || dims[0] != count) {
          return absl::InvalidArgumentError(absl::StrCat("output '", out.name, "' has no batch dim to collect"));
        }
        dims[0] = total;
        results.emplace_back(out.tensor.dtype(), dims);
        filled.push_back(0);
      }
    }
    for (size_t k = 0; k < outputs->size(); ++k) {
      const ir::Tensor& t = (*outputs)[k].tensor;
      // A data-dependent output shape must not write past what the first batch set up.
      std::vector<int64_t> expected = results[k].dims();
      expected[0] = count;
      if (t.dtype() != results[k].dtype() || t.dims() != expected) {
        return absl::InvalidArgumentError(absl::StrCat("samples ", start, "..", start + count - 1, ": output '",
                                                       (*outputs)[k].name, "' has shape ", ir::DimsToString(t.dims()),
                                                       ", expected ", ir::DimsToString(expected),
                                                       " as in the first batch"));
      }
      std::memcpy(static_cast<uint8_t*>(results[k].raw_data()) + filled[k], t.raw_data(), t.byte_size());
      filled[k] += static_cast<int64_t>(t.byte_size());
    }
    if (progress) progress->Update(start + count);
  }
  if (progress) progress->Finish();
  return results;
}

absl::StatusOr<double> Top1Accuracy(const ir::Tensor& logits, const std::vector<int64_t>& labels) {
  if (logits.dtype() != ir::DataType::kFloat32 || logits.rank() != 2) {
    return absl::InvalidArgumentError("top-1 needs FLOAT [samples, classes] outputs");
  }
  const int64_t n = logits.dims()[0];
  const int64_t classes = logits.dims()[1];
  if (static_cast<int64_t>(labels.size()) < n) {
    return absl::InvalidArgumentError(absl::StrCat(labels.size(), " labels for ", n, " samples"));
  }
  const absl::Span<const float> values = logits.values<float>();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) correct += ArgMaxRow(values, i, classes) == labels[i];
  return 100.0 * correct / n;
}

double SqnrDb(absl::Span<const float> reference, absl::Span<const float> actual) {
  return SqnrOf(SumPairs(reference, actual));
}

double Cosine(absl::Span<const float> a, absl::Span<const float> b) { return CosineOf(SumPairs(a, b)); }

void SqnrAndCosine(absl::Span<const float> reference, absl::Span<const float> actual, double* sqnr_db, double* cosine) {
  const PairSums s = SumPairs(reference, actual);
  *sqnr_db = SqnrOf(s);
  *cosine = CosineOf(s);
}

absl::StatusOr<OutputAgreement> CompareOutputs(const ir::Tensor& reference, const ir::Tensor& actual) {
  if (reference.dtype() != ir::DataType::kFloat32 || actual.dtype() != ir::DataType::kFloat32 ||
      reference.dims() != actual.dims()) {
    return absl::InvalidArgumentError(absl::StrCat("outputs differ in type or shape: ",
                                                   ir::DataTypeName(reference.dtype()),
                                                   ir::DimsToString(reference.dims()), " vs ",
                                                   ir::DataTypeName(actual.dtype()), ir::DimsToString(actual.dims())));
  }
  OutputAgreement a;
  auto r = reference.values<float>();
  auto x = actual.values<float>();
  SqnrAndCosine(r, x, &a.sqnr_db, &a.cosine);
  for (size_t i = 0; i < r.size(); ++i) a.max_abs_diff = std::max<double>(a.max_abs_diff, std::fabs(r[i] - x[i]));
  a.top1_agreement = std::numeric_limits<double>::quiet_NaN();
  if (reference.rank() == 2 && reference.dims()[0] > 0) {
    const int64_t n = reference.dims()[0];
    const int64_t c = reference.dims()[1];
    int64_t same = 0;
    for (int64_t i = 0; i < n; ++i) same += ArgMaxRow(r, i, c) == ArgMaxRow(x, i, c);
    a.top1_agreement = 100.0 * same / n;
  }
  if (reference.rank() >= 1 && reference.dims()[0] > 0) PerSampleAgreement(r, x, reference.dims()[0], &a);
  return a;
}

bool DominatedByOneSample(const OutputAgreement& agreement) {
  return agreement.worst_sample >= 0 && agreement.worst_sample_error_share > 0.5 &&
         agreement.samples >= 4;
}

}  // namespace qfuse::pipeline
