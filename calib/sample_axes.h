// Which axis of each observed activation indexes the calibration samples, so that the
// sample-balanced counts weigh every sample alike however the samples are batched: a
// sequence-first transformer's [seq, batch, d] values hold the samples on axis 1, a
// [seq, batch, d] value whose seq happens to equal the batch's sample count must not be read
// as sample-major, and attention's [batch x heads, seq, d] values hold each sample's heads as
// consecutive slices of axis 0.
#ifndef QFUSE_CALIB_SAMPLE_AXES_H_
#define QFUSE_CALIB_SAMPLE_AXES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "data/dataset.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/executor.h"

namespace qfuse::calib {

// Where a value holds the samples: `axis`, with `slices` consecutive or interleaved slices per
// sample where the batch is merged with another axis.
struct SampleAxis {
  int axis = 0;
  // 1: the axis is the batch. k > 1: the axis is the batch merged with another of size k,
  // sample-major ([batch x heads]: sample b's slices b * k ... b * k + k - 1) or not
  // ([seq x batch]: sample b's slices b, b + batch, ...).
  int64_t slices = 1;
  bool sample_major = true;
};

struct SampleAxes {
  // false: not found (a fixed batch, or fewer than 2 samples); a value's leading dim is then
  // taken as its sample axis when it equals the batch's sample count.
  bool known = false;
  // value -> where it holds the samples; a value left out has none (no batch, or a merge the
  // probe runs did not show) and is weighed as one sample per batch.
  absl::flat_hash_map<const ir::Value*, SampleAxis> axis;
};

// From the static shapes when every value in `values` has the graph inputs' symbolic batch dim
// first and nowhere else; otherwise from runs of `graph` on an executor of its own (made with
// `options`, gone after), on the first two samples and on the first: a value's sample axis is
// the one axis whose size goes from 1 to 2 while every other size stays. An axis that goes from
// k > 1 to 2k (a batch merged with another axis) is the sample axis, k slices per sample, when a
// third run (two samples) shows the order: sample-major when the two-sample value's first k
// slices equal the one-sample value, interleaved when its even slices do (to 1e-4 of the
// one-sample value's largest magnitude; kernels may round another batch size's last bits
// differently); neither leaves the value out. Graph inputs among `values` are read from the
// batches. A run that fails (a model that runs only at some batch sizes) leaves the axes not
// found; the calibration runs report their own errors.
absl::StatusOr<SampleAxes> FindSampleAxes(const ir::Graph& graph, const std::vector<const ir::Value*>& values,
                                          const runtime::ExecutorOptions& options, data::Dataset& data);

// `tensor`'s dims with its sample axis on its own: a merged axis split in two ([count, k]
// sample-major, [k, count] interleaved), and where the samples are in them.
struct SampleView {
  std::vector<int64_t> dims;
  int axis = 0;
};

// The sample view of `value` in `tensor`, a batch of `count` samples; nullopt when it has none
// (or its size there is not `count` times its slices per sample).
std::optional<SampleView> SampleViewOf(const SampleAxes& axes, const ir::Value* value, const ir::Tensor& tensor,
                                       int64_t count);

// `values`, laid out as `dims`, with `axis` moved first (sample-major), in `out`.
void MoveAxisFirst(absl::Span<const float> values, absl::Span<const int64_t> dims, int axis, std::vector<float>* out);

}  // namespace qfuse::calib

#endif  // QFUSE_CALIB_SAMPLE_AXES_H_
