// Makes untrusted models safe to hand to ONNX 1.12's shape inference (Debian's libonnx).
// Its Conv-family inference takes the kernel size from the weights when `kernel_shape` is
// absent and then indexes the per-axis `dilations` with it, past the end when the weights
// have more spatial axes than the data (a SEGV the model fuzzer found). Writing the
// weights' spatial dims as an explicit `kernel_shape` (the attribute's documented default)
// turns that case into ONNX's own "incorrect size" error.
#ifndef QFUSE_IR_SHAPE_INFERENCE_GUARD_H_
#define QFUSE_IR_SHAPE_INFERENCE_GUARD_H_

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace qfuse::ir {

// Adds `kernel_shape` to Conv, ConvTranspose, ConvInteger and QLinearConv nodes that lack
// it and whose weights' dims are known statically (an initializer or Constant, possibly
// behind DequantizeLinear, QuantizeLinear, Cast or Identity). InvalidArgument naming the
// node when those weights have fewer than 3 dims.
absl::Status GuardShapeInference(onnx::GraphProto* graph);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_SHAPE_INFERENCE_GUARD_H_
