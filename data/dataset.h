// Calibration datasets: each model input's samples (from the sources of data_source.h),
// validated against the model, read in deterministic order and stacked into batches shaped
// like the model's inputs.
#ifndef QFUSE_DATA_DATASET_H_
#define QFUSE_DATA_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/data_source.h"
#include "data/idx.h"  // ReadIdxLabels
#include "ir/graph.h"
#include "ir/tensor.h"

namespace qfuse::data {

class Dataset {
 public:
  virtual ~Dataset() = default;
  // Samples available (after any limit).
  virtual int64_t size() const = 0;
  // Samples [start, start+count) stacked along the leading batch dim, one tensor per model
  // input (in graph-input order), each shaped to the model input's declared shape with the
  // symbolic batch dim = count. Deterministic order. Fails (naming the sample) on a range
  // outside [0, size()), a count other than fixed_batch() when that is set, or a sample
  // that cannot be read.
  virtual absl::StatusOr<std::vector<ir::NamedTensor>> ReadBatch(int64_t start, int64_t count) = 0;
  // "train-images-idx3-ubyte.gz sample 17", "imgs/cat.jpg" — for error messages; with
  // several inputs, one entry per input ("a: a.npy sample 3, b: b.npy sample 3").
  virtual std::string DescribeSample(int64_t index) const = 0;
  // 0 when every input's batch dim is symbolic or unknown (any count); N when an input
  // declares a known batch dim N: ReadBatch then only accepts count == N.
  virtual int64_t fixed_batch() const { return 0; }
};

// The checks every Dataset::ReadBatch makes: [start, start + count) inside [0, size)
// (OutOfRange) and count == fixed_batch when that is set (InvalidArgument).
absl::Status CheckBatchRange(int64_t start, int64_t count, int64_t size, int64_t fixed_batch);

// Samples per batch that keep one batch's inputs within `max_input_bytes` (at least 1, at most
// `max_samples`), from the size of sample 0: the default batch of calibration and evaluation,
// so that a large-input model (a 320x320 detector takes 1.2 MB a sample and holds about 10 MB
// of activations per sample) does not hold hundreds of MiB per batch. The fixed batch of a
// model that has one; max(max_samples, 1) when the dataset is empty.
absl::StatusOr<int64_t> BatchWithinInputBytes(Dataset& data, int64_t max_samples, int64_t max_input_bytes);
// The input bytes per batch of that default.
inline constexpr int64_t kDefaultBatchInputBytes = int64_t{8} << 20;

// Opens one source per model input (sources matched by input_name; an unnamed source only
// for a one-input model), validates every sample's element count/dtype against the model
// input's declared type (expected vs got, naming the file/sample index and the input),
// limits to `max_samples` (0 = all; --calib_samples). All inputs must provide the same number
// of samples (after the limit). Only the first max_samples samples are read or checked.
absl::StatusOr<std::unique_ptr<Dataset>> OpenDataset(const std::vector<DataSource>& sources, const ir::Graph& model,
                                                     int64_t max_samples);

// Samples [start, start + count) of `data` as a dataset of `count` samples (e.g. calibration
// samples held back for evaluation). Fails when the range is not inside `data`.
absl::StatusOr<std::unique_ptr<Dataset>> SliceDataset(std::unique_ptr<Dataset> data, int64_t start, int64_t count);

}  // namespace qfuse::data

#endif  // QFUSE_DATA_DATASET_H_
