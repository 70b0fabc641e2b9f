// Calibration: runs the (fused) float graph on sample data with the reference runtime
// and derives a saturated threshold for every activation that will be quantized.
#ifndef QFUSE_CALIB_CALIBRATOR_H_
#define QFUSE_CALIB_CALIBRATOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "calib/calibration_table.h"
#include "calib/thresholds.h"
#include "data/dataset.h"
#include "ir/graph.h"

namespace qfuse::calib {

struct CalibrateOptions {
  ThresholdOptions threshold;
  UnsignedGrid unsigned_grid = UnsignedGrid::kNone;
  int64_t num_samples = 512;  // taken from the start of the dataset, in order
  // Samples per runtime batch; 0: as many as fit data::kDefaultBatchInputBytes of input, at
  // most 32 (a model with a fixed batch dim always takes that).
  int64_t batch_size = 0;
  int num_threads = 2;
  bool show_progress = true;  // progress bar / lines on stderr
  // Residual operands (a quantized unit's residual input, or either input of an Add of
  // two activations) are added to the output with no weights in between, so clipping
  // them passes the whole clipping error to the output. By default they get the
  // non-saturated max threshold whatever the method; set true to saturate them too.
  // (On the ResNet sample, entropy with saturated residuals loses 1.1 top-1 points.)
  bool saturate_residuals = false;
  // Every activation threshold, once chosen, times this factor (> 0): headroom for deployment
  // data that goes beyond the calibration samples' ranges, at the cost of resolution (1.5
  // spends about 0.6 bits of the 8). 1: the thresholds as chosen.
  double activation_headroom = 1.0;
  // A threshold above the bound of the saturating ops that read the value (Sigmoid, Tanh,
  // HardSigmoid, Clip; ir/reader_saturation.h) is lowered to that bound (after the headroom):
  // the readers' outputs do not tell the values beyond it apart. IS-Net's mask: 12.08 -> 14.79 dB
  // (docs/zoo.md, thirty-second session).
  bool bound_by_readers = true;
};

struct CalibrationRun {
  CalibrationTable table;
  double seconds = 0;
  int64_t peak_activation_bytes = 0;  // the runtime's largest live set per batch
  int64_t histogram_bytes = 0;        // observer state: independent of the sample count
};

// OK when `headroom` (CalibrateOptions::activation_headroom) is a finite factor > 0.
absl::Status CheckActivationHeadroom(double headroom);

// The values calibration observes and quantization quantizes: every FLOAT graph input
// and every FLOAT node output (at fusion level `full` these are exactly the quantized
// units' inputs and outputs; at `bn`/`none` every op output).
std::vector<const ir::Value*> ObservedValues(const ir::Graph& graph);

// Residual operands, as described at CalibrateOptions::saturate_residuals.
std::vector<const ir::Value*> ResidualValues(const ir::Graph& graph);

// One pass over the samples with one streaming |x| histogram per observed value (histogram.h:
// its grid is a power of two set by all the values, so batching does not move a threshold,
// beyond the last bits of values that a kernel rounds differently at another batch size, the
// sample-balanced weights of values whose batch is merged with another axis in a way the
// probe runs do not show (weighed as one sample per batch; a value's sample axis, and a merge
// such as attention's [batch x heads, ...] or [seq x batch, ...], are found by
// sample_axes.h), and the order in which
// the balanced counts' doubles are summed, which can flip an exact tie), then a threshold
// per value. NaN or Inf in an activation is an error naming the tensor and the samples of the
// batch.
absl::StatusOr<CalibrationRun> Calibrate(const ir::Graph& graph, data::Dataset& data, const CalibrateOptions& options);

}  // namespace qfuse::calib

#endif  // QFUSE_CALIB_CALIBRATOR_H_
