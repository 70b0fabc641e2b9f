#include "calib/calibrator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "calib/graph_fingerprint.h"
#include "calib/histogram.h"
#include "calib/progress.h"
#include "calib/sample_axes.h"
#include "ir/fused_unit.h"
#include "ir/reader_saturation.h"
#include "ir/value_sign.h"
#include "numerics/threshold_scale.h"
#include "runtime/executor.h"

namespace qfuse::calib {

std::vector<const ir::Value*> ObservedValues(const ir::Graph& graph) {
  std::vector<const ir::Value*> values;
  for (const ir::Value* in : graph.inputs()) {
    if (in->type().dtype == ir::DataType::kFloat32) values.push_back(in);
  }
  absl::StatusOr<std::vector<ir::Node*>> order = graph.TopologicalOrder();
  if (!order.ok()) return values;
  for (const ir::Node* n : *order) {
    for (const ir::Value* out : n->outputs()) {
      if (out != nullptr && out->type().dtype == ir::DataType::kFloat32) values.push_back(out);
    }
  }
  return values;
}

std::vector<const ir::Value*> ResidualValues(const ir::Graph& graph) {
  std::vector<const ir::Value*> residuals;
  for (const ir::Node* n : graph.nodes()) {
    if (ir::IsUnit(*n) && n->input(ir::kUnitResidual) != nullptr) residuals.push_back(n->input(ir::kUnitResidual));
    if (n->domain().empty() && n->op_type() == "Add" && n->inputs().size() == 2 && !n->input(0)->is_constant() &&
        !n->input(1)->is_constant()) {
      residuals.push_back(n->input(0));
      residuals.push_back(n->input(1));
    }
  }
  return residuals;
}

// Where a tensor of a batch of `count` samples from `start` holds its first NaN/Inf:
// "in sample N (<file> sample N)" when the tensor has a sample axis (`view`), otherwise the
// batch's range.
std::string NonFiniteSamples(const ir::Tensor& tensor, const std::optional<SampleView>& view, int64_t start,
                             int64_t count, const data::Dataset& data) {
  const absl::Span<const float> values = tensor.values<float>();
  if (view.has_value() && count > 0) {
    int64_t inner = 1;  // elements per step of the sample axis
    for (size_t d = view->axis + 1; d < view->dims.size(); ++d) inner *= view->dims[d];
    for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
      if (!std::isfinite(values[i])) {
        const int64_t sample = start + (i / std::max<int64_t>(1, inner)) % count;
        return absl::StrCat("in sample ", sample, " (", data.DescribeSample(sample), ")");
      }
    }
  }
  return absl::StrCat("for samples ", start, "..", start + count - 1, " (from ", data.DescribeSample(start), ")");
}

absl::Status CheckActivationHeadroom(double headroom) {
  if (headroom > 0 && std::isfinite(headroom)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--activation_headroom must be a positive factor, got ", headroom));
}

absl::StatusOr<CalibrationRun> Calibrate(const ir::Graph& graph, data::Dataset& data, const CalibrateOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  QFUSE_RETURN_IF_ERROR(CheckActivationHeadroom(options.activation_headroom));
  if (options.batch_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch_size must be positive, or 0 for the default, got ", options.batch_size));
  }
  int64_t total = std::min(options.num_samples, data.size());
  // A model with a fixed batch dim takes exactly that many samples per run: use whole batches.
  if (data.fixed_batch() > 0) total -= total % data.fixed_batch();
  if (total <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("calibration needs at least ", std::max<int64_t>(1, data.fixed_batch()),
                                                   " samples, the dataset has ", data.size()));
  }
  runtime::ExecutorOptions exec_options;
  exec_options.num_threads = options.num_threads;
  exec_options.fuse_float_chains = false;  // every observed value computed as the graph has it
  QFUSE_ASSIGN_OR_RETURN(auto exec, runtime::Executor::Create(graph, exec_options));

  absl::flat_hash_map<const ir::Value*, AbsHistogram> histograms;
  for (const ir::Value* v : ObservedValues(graph)) histograms.emplace(v, AbsHistogram());
  absl::Status observer_error;
  // Only the squared-error scores read the sample-balanced counts.
  const bool balanced = options.threshold.method == CalibrationMethod::kAuto ||
                        options.threshold.method == CalibrationMethod::kBalancedMse;
  int64_t batch_size = data.fixed_batch() > 0 ? data.fixed_batch() : options.batch_size;
  if (batch_size <= 0) {
    QFUSE_ASSIGN_OR_RETURN(batch_size, data::BatchWithinInputBytes(data, 32, data::kDefaultBatchInputBytes));
  }
  SampleAxes sample_axes;
  // Batches of one sample weigh every value per sample whatever its axis: no probe.
  if (balanced && std::min(batch_size, total) > 1) {
    std::vector<const ir::Value*> observed;
    for (const auto& [value, histogram] : histograms) observed.push_back(value);
    QFUSE_ASSIGN_OR_RETURN(sample_axes, FindSampleAxes(graph, observed, exec_options, data));
  }
  std::vector<float> sample_major;  // a value whose sample axis is not its first, moved first
  int64_t batch_start = 0;
  int64_t batch_count = 0;
  int64_t batch_index = 0;
  runtime::RunOptions run_options;
  run_options.observer = [&](const ir::Value& value, const ir::Tensor& tensor) {
    auto it = histograms.find(&value);
    if (it == histograms.end() || !observer_error.ok() || tensor.dtype() != ir::DataType::kFloat32) return;
    const int64_t nonfinite_before = it->second.nonfinite_count();
    const AbsHistogram::PartRunner on_pool = [&](int parts, const std::function<void(int)>& part) {
      exec->pool().ParallelFor(parts, 1, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) part(static_cast<int>(k));
      });
    };
    // Both passes over a large tensor on the executor's threads (the same counts as Add).
    if (balanced) {
      // Weighed per sample along the value's sample axis (sample_axes.h; moved first when it is
      // not), or as one sample per batch (the batch's index its sample index) when it has none.
      const std::optional<SampleView> view = SampleViewOf(sample_axes, &value, tensor, batch_count);
      absl::Span<const float> values = tensor.values<float>();
      if (view.has_value() && view->axis > 0) {
        MoveAxisFirst(values, view->dims, view->axis, &sample_major);
        values = sample_major;
      }
      it->second.AddSamples(values, view.has_value() ? batch_count : 1, view.has_value() ? batch_start : batch_index,
                            exec->pool().num_threads(), on_pool);
    } else {
      it->second.AddInParts(tensor.values<float>(), exec->pool().num_threads(), on_pool);
    }
    if (it->second.nonfinite_count() != nonfinite_before) {
      observer_error = absl::InvalidArgumentError(
          absl::StrCat("tensor '", value.name(), "' has NaN or Inf ",
                       NonFiniteSamples(tensor, SampleViewOf(sample_axes, &value, tensor, batch_count), batch_start,
                                        batch_count, data)));
    }
  };

  std::unique_ptr<ProgressBar> progress;
  if (options.show_progress) progress = std::make_unique<ProgressBar>("calibrate", total);
  int64_t peak = 0;
  absl::flat_hash_map<std::string, const ir::Value*> inputs_by_name;
  for (const ir::Value* gi : graph.inputs()) inputs_by_name.emplace(gi->name(), gi);
  for (batch_start = 0; batch_start < total; batch_start += batch_count) {
    batch_count = std::min(batch_size, total - batch_start);
    batch_index = batch_start / batch_size;
    QFUSE_ASSIGN_OR_RETURN(std::vector<ir::NamedTensor> inputs, data.ReadBatch(batch_start, batch_count));
    // Graph inputs are observed too; the executor reports only node outputs.
    for (const ir::NamedTensor& in : inputs) {
      auto it = inputs_by_name.find(in.name);
      if (it != inputs_by_name.end()) run_options.observer(*it->second, in.tensor);
    }
    absl::StatusOr<std::vector<ir::NamedTensor>> outputs = exec->Run(inputs, run_options);
    if (!outputs.ok()) {
      return absl::Status(outputs.status().code(), absl::StrCat("samples ", batch_start, "..",
                                                                batch_start + batch_count - 1, ": ",
                                                                outputs.status().message()));
    }
    QFUSE_RETURN_IF_ERROR(observer_error);
    peak = std::max(peak, exec->peak_activation_bytes());
    if (progress) progress->Update(batch_start + batch_count);
  }
  if (progress) progress->Finish();

  CalibrationRun run;
  run.table.method = std::string(CalibrationMethodName(options.threshold.method));
  run.table.percentile = options.threshold.percentile;
  run.table.samples = total;
  QFUSE_ASSIGN_OR_RETURN(run.table.fingerprint, GraphFingerprint(graph));
  absl::flat_hash_set<const ir::Value*> residuals;
  if (!options.saturate_residuals) {
    for (const ir::Value* v : ResidualValues(graph)) residuals.insert(v);
  }
  ir::ValueLowerBounds bounded;  // the values the grid rule covers by construction
  if (options.unsigned_grid == UnsignedGrid::kNonNegativeByConstruction) {
    QFUSE_ASSIGN_OR_RETURN(bounded, ir::NonNegativeValues(graph));
  } else if (options.unsigned_grid == UnsignedGrid::kBoundedBelowByConstruction) {
    QFUSE_ASSIGN_OR_RETURN(bounded, ir::LowerBounds(graph));
  }
  ir::ReaderBounds reader_bounds;
  if (options.bound_by_readers) {
    QFUSE_ASSIGN_OR_RETURN(reader_bounds, ir::SaturatingReaderBounds(graph));
  }
  for (auto& [value, histogram] : histograms) histogram.FinishSamples();
  // Threshold searches are independent per tensor: run them on the executor's threads.
  std::vector<std::pair<const ir::Value*, const AbsHistogram*>> entries;
  for (const auto& [value, histogram] : histograms) entries.emplace_back(value, &histogram);
  std::vector<absl::StatusOr<ThresholdChoice>> choices(entries.size(), absl::UnknownError("not computed"));
  exec->pool().ParallelFor(static_cast<int64_t>(entries.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      ThresholdOptions threshold_options = options.threshold;
      if (residuals.contains(entries[i].first)) threshold_options.method = CalibrationMethod::kMax;
      const bool unsigned_grid =
          bounded.contains(entries[i].first) ||
          (options.unsigned_grid == UnsignedGrid::kObservedNonNegative && entries[i].second->min() >= 0);
      if (unsigned_grid) threshold_options.num_quantized_bins = kUnsignedGridBins;
      choices[i] = ChooseThreshold(*entries[i].second, threshold_options);
    }
  });
  for (size_t i = 0; i < entries.size(); ++i) {
    const ir::Value* value = entries[i].first;
    const AbsHistogram& histogram = *entries[i].second;
    TensorRange range;
    range.name = value->name();
    range.min = histogram.min();
    range.max = histogram.max();
    const absl::StatusOr<ThresholdChoice>& choice = choices[i];
    if (!choice.ok()) {
      return absl::Status(choice.status().code(),
                          absl::StrCat("tensor '", value->name(), "': ", choice.status().message()));
    }
    range.threshold = static_cast<float>(
        std::min<double>(choice->threshold * options.activation_headroom, std::numeric_limits<float>::max()));
    range.method = std::string(CalibrationMethodName(choice->method));
    if (auto bound = reader_bounds.find(value);
        bound != reader_bounds.end() && range.threshold > bound->second.magnitude) {
      range.threshold = bound->second.magnitude;
      range.bounded_by = bound->second.reader;
    }
    range.scale = numerics::ScaleOfThreshold(range.threshold, numerics::kInt8SymmetricMax);
    run.table.tensors.push_back(range);
    run.histogram_bytes += static_cast<int64_t>(histogram.num_bins() * sizeof(int64_t) +
                                                histogram.balanced_bins().size() * sizeof(double));
  }
  std::sort(run.table.tensors.begin(), run.table.tensors.end(),
            [](const TensorRange& a, const TensorRange& b) { return a.name < b.name; });
  run.peak_activation_bytes = peak;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace qfuse::calib
