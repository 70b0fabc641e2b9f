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

// Whether oneDNN computes the exact int32 accumulator for activations of `x_type` and these
// int8 weights on this CPU (under the ISA cap): always at AVX-512 VNNI (vpdpbusd sums without
// saturation); at AVX2 / AVX-512 without VNNI, whose vpmaddubsw saturates pairs of products
// to int16, only for weights within [-64, 64] (--reduce_range), where a pair of a uint8 source
// and a weight is at most 255 * 64 * 2 = 32640. INT8 activations are then flipped to uint8
// (x ^ 0x80, zero point + 128) before oneDNN reads them.
bool OneDnnInt8IsExact(ir::DataType x_type, const ir::Tensor& weights);
// Whether oneDNN gives the exact accumulator for any int8 weights through the split source
// (source_split.h: a 7-bit source plus the outliers added back): at AVX2 and AVX-512 without
// VNNI, for INT8/UINT8 activations.
bool OneDnnSplitSourceIsExact(ir::DataType x_type);

// Where the accumulators of a channels-last integer conv unit come from: oneDNN's int8
// convolution (where OneDnnInt8IsExact, else through the split source where
// OneDnnSplitSourceIsExact) or qfuse's channels-last tiles
// (runtime/kernels/quant/nhwc_conv.h), whose output stage runs per tile. kAuto picks per
// unit (UseTiles) and, per call, gives a split source dense in outliers to the tiles;
// kOneDnn runs every unit oneDNN can run exactly on oneDNN (tests use it to exercise the
// split on every shape). QFUSE_INT8_CONV=tiles|onednn sets the start value (benchmarks).
enum class Int8ConvEngine { kAuto, kOneDnn, kTiles };
void SetInt8ConvEngine(Int8ConvEngine engine);
// Pointwise units (1x1, stride 1, no padding, one group) on oneDNN run in bands of pixels
// whose int32 accumulators fit this many bytes, each band from the split to the output stage
// on one OpenMP thread (default 256 KiB; QFUSE_POINTWISE_BAND_KB sets the start value; 0 runs
// them in whole images like the other units). Tests shrink it to cut many bands. Units whose
// output stage runs inside oneDNN (see CreateIntegerUnitKernel) keep no accumulators and
// run the whole batch in one call instead.
void SetPointwiseBandBytes(int64_t bytes);
// True when a unit with these activations, weights and group runs on the tiles: always
// where oneDNN is not exact, else as chosen above.
bool UseTiles(ir::DataType x_type, const ir::Tensor& weights, int64_t group);

// Registry factory for qfuse.QLinearUnit: the channels-last kernel (accumulators from oneDNN
// or the tiles, see above) when UseOneDnn() and the unit fits (Conv with 4-D weights,
// symmetric weights, a clamp activation, INT8/UINT8 output); otherwise the hand-written
// integer kernel (runtime/int8), which also runs any shape oneDNN refuses. A unit on
// oneDNN's direct accumulators without a residual whose stage qualifies
// (fused_output_stage.h) runs the stage inside oneDNN's convolution, which then writes the
// output bytes itself.
absl::StatusOr<std::unique_ptr<Kernel>> CreateIntegerUnitKernel(const ir::Node& node);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_QLINEAR_CONV_KERNEL_H_
