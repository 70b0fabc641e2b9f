// qfuse.QLinearUnit Conv units on oneDNN: oneDNN computes the exact int32 accumulator
// sum (x - zp_x) * w of a 2-D convolution (u8/s8 x s8, channels-last), and qfuse's own
// output stage (runtime/int8/output_stage.h) requantizes it, so the bytes are those of
// the hand-written integer kernel. INT8/UINT8 activations between two such kernels stay
// channels-last (LayoutKind::kChannelsLast).
#ifndef QFUSE_RUNTIME_ONEDNN_QLINEAR_CONV_KERNEL_H_
#define QFUSE_RUNTIME_ONEDNN_QLINEAR_CONV_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::onednn {

// Registry factory for qfuse.QLinearUnit: the oneDNN kernel when UseOneDnn(), oneDNN runs
// at AVX-512 VNNI (whose vpdpbusd sums without the int16 saturation of the AVX2 int8
// instructions, so the accumulator is exact) and the unit fits (Conv with 4-D weights,
// symmetric weights, a clamp activation, INT8/UINT8 output); otherwise the hand-written
// integer kernel (runtime/int8), which also runs any shape oneDNN refuses.
absl::StatusOr<std::unique_ptr<Kernel>> CreateIntegerUnitKernel(const ir::Node& node);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_QLINEAR_CONV_KERNEL_H_
