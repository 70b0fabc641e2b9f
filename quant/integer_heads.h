// The integer-head form of a quantized unit, which onnxruntime runs with exactly the
// arithmetic of qfuse's integer runtime. onnxruntime has no integer kernel for a unit whose
// base op is followed by a residual Add or an activation (its QDQ selectors need
// DequantizeLinear -> Conv -> QuantizeLinear), so it runs such a unit's convolution in float32,
// whose rounding depends on its summation order. Written as
//   ConvInteger(x_q, w + 128 as UINT8, zp_x, 128) -> Add(INT32 bias [M, 1, ...])
//   -> DequantizeLinear(scale d_a[c] = float32(s_x * s_w[c]), axis 1)
//   -> [Add DequantizeLinear(residual)] -> [activation] -> QuantizeLinear(s_y, zp_y)
// every step is exact integer arithmetic or one float32 operation that onnxruntime and qfuse
// (runtime/int8/output_stage.h, dequantize_then_quantize; lowered back to one QLinearUnit by
// runtime/int8/qdq_lowering.h) compute identically, so both give the same bytes.
// onnxruntime's ConvInteger takes UINT8 activations and weights, hence the weights shifted by
// 128 and the condition that activations are stored as UINT8.
#ifndef QFUSE_QUANT_INTEGER_HEADS_H_
#define QFUSE_QUANT_INTEGER_HEADS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace qfuse::quant {

// Rewrites every Conv unit of a converted QDQ graph (quant/qdq_converter.h) that reads a UINT8
// activation and INT8 weights through DequantizeLinear and either has a residual or an
// activation and an output only a QuantizeLinear reads, or has a float graph output that
// nothing else reads (a segmentation head: without a QuantizeLinear onnxruntime runs it in
// float32 too), into the integer-head form (its other units and ops unchanged); the second
// kind ends at the DequantizeLinear or the activation. A plain Conv (levels `bn` and `none`)
// with such operands and a float graph output is rewritten the same way. Returns how many
// units and Convs it rewrote.
absl::StatusOr<int64_t> WriteIntegerHeads(ir::Graph* graph);

}  // namespace qfuse::quant

#endif  // QFUSE_QUANT_INTEGER_HEADS_H_
