// Which axis of each observed activation indexes the calibration samples, so that the
// sample-balanced counts weigh every sample alike however the samples are batched: a
// sequence-first transformer's [seq, batch, d] values hold the samples on axis 1, and a
// [seq, batch, d] value whose seq happens to equal the batch's sample count must not be read
// as sample-major.
#ifndef QFUSE_CALIB_SAMPLE_AXES_H_
#define QFUSE_CALIB_SAMPLE_AXES_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "data/dataset.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/executor.h"

namespace qfuse::calib {

struct SampleAxes {
  // false: not found (a fixed batch, or fewer than 2 samples); a value's leading dim is then
  // taken as its sample axis when it equals the batch's sample count.
  bool known = false;
  // value -> its sample axis; a value left out has none (its batch merged with another axis,
  // or no batch at all) and is weighed as one sample per batch.
  absl::flat_hash_map<const ir::Value*, int> axis;
};

// From the static shapes when every value in `values` has the graph inputs' symbolic batch dim
// first and nowhere else; otherwise from two runs of `graph` on an executor of its own (made
// with `options`, gone after), on the first sample and on the first two: a value's sample axis
// is the one axis whose size goes from 1 to 2 while every other size stays. Graph inputs among
// `values` are read from the batches. A run that fails (a model that runs only at some batch
// sizes) leaves the axes not found; the calibration runs report their own errors.
absl::StatusOr<SampleAxes> FindSampleAxes(const ir::Graph& graph, const std::vector<const ir::Value*>& values,
                                          const runtime::ExecutorOptions& options, data::Dataset& data);

// The sample axis of `value` in `tensor`, a batch of `count` samples, or -1 when it has none.
int SampleAxisOf(const SampleAxes& axes, const ir::Value* value, const ir::Tensor& tensor, int64_t count);

// The values of `tensor` with `axis` moved first (sample-major), in `out`.
void MoveAxisFirst(const ir::Tensor& tensor, int axis, std::vector<float>* out);

}  // namespace qfuse::calib

#endif  // QFUSE_CALIB_SAMPLE_AXES_H_
