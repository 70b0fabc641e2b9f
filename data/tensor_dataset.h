// A calibration dataset over samples held in memory (arrays handed in by a caller such as
// the Python module, instead of files): each sample is one tensor per model input.
#ifndef QFUSE_DATA_TENSOR_DATASET_H_
#define QFUSE_DATA_TENSOR_DATASET_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace qfuse::data {

// samples[i]: sample i, one tensor per model input, named like the input (any order).
using TensorSamples = std::vector<std::vector<ir::NamedTensor>>;

// A Dataset over `samples` (shared, never copied; batches are stacked copies). Every sample
// among the first `max_samples` (0: all) is checked when the dataset opens, and an error
// names the sample index and the input:
//  - it holds exactly one tensor per model input (no missing, unknown or repeated name);
//  - each tensor has the input's dtype (any dtype when the input's is undefined, but every
//    sample the same as sample 0);
//  - each tensor is shaped like the input's per-sample shape (its declared shape without
//    the leading batch dim), or like that shape with a leading batch dim of 1 in front.
//    Declared dims must match exactly; symbolic or unknown ones are taken from sample 0
//    and every other sample must equal them. With unknown rank, a sample's shape is used
//    as it is (no batch dim stripped) and every sample must have sample 0's shape.
// A known leading batch dim N of an input makes fixed_batch() N, as for OpenDataset.
// Fails on no samples, or an input declared as a scalar.
absl::StatusOr<std::unique_ptr<Dataset>> OpenTensorDataset(std::shared_ptr<const TensorSamples> samples,
                                                           const ir::Graph& model, int64_t max_samples);

}  // namespace qfuse::data

#endif  // QFUSE_DATA_TENSOR_DATASET_H_
