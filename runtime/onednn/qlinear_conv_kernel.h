// qfuse.QLinearUnit Conv units on channels-last activations: oneDNN (where exact) or qfuse's
// channels-last tiles compute the exact int32 accumulator sum (x - zp_x) * w of a 2-D
// convolution, and qfuse's own output stage (runtime/int8/output_stage.h) requantizes it, so
// the bytes are those of the hand-written integer kernel. INT8/UINT8 activations between two
// such kernels stay channels-last (LayoutKind::kChannelsLast).
#ifndef QFUSE_RUNTIME_ONEDNN_QLINEAR_CONV_KERNEL_H_
#define QFUSE_RUNTIME_ONEDNN_QLINEAR_CONV_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::onednn {

// Pointwise units (1x1, stride 1, no padding, one group) on oneDNN run in bands of pixels
// whose int32 accumulators fit this many bytes, each band from the split to the output stage
// on one OpenMP thread (default 256 KiB; QFUSE_POINTWISE_BAND_KB sets the start value; 0 runs
// them in whole images like the other units). Tests shrink it to cut many bands. Units whose
// output stage runs inside oneDNN (see CreateIntegerUnitKernel) keep no accumulators and
// run the whole batch in one call instead.
void SetPointwiseBandBytes(int64_t bytes);

// Registry factory for qfuse.QLinearUnit: the channels-last kernel (accumulators from oneDNN
// or the tiles, int8_conv_engine.h) when UseOneDnn() and the unit fits (Conv with 4-D weights,
// symmetric weights, INT8/UINT8 output; a non-linear activation runs the float epilogue of
// output_stage.h on the accumulators); otherwise the hand-written
// integer kernel (runtime/int8), which also runs any shape oneDNN refuses. A unit on
// oneDNN's direct accumulators without a residual whose stage qualifies
// (fused_output_stage.h) runs the stage inside oneDNN's convolution, which then writes the
// output bytes itself.
absl::StatusOr<std::unique_ptr<Kernel>> CreateIntegerUnitKernel(const ir::Node& node);
// How many units with a non-linear activation CreateIntegerUnitKernel has put on the
// channels-last kernel in this process (tests check that they left the hand-written one).
int64_t ChannelsLastFloatEpilogueUnits();

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_QLINEAR_CONV_KERNEL_H_
