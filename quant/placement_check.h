// Checks an emitted QDQ graph (standard ops: quantized units expanded) against TensorRT's
// explicit-quantization rules, as docs/deploy_targets.md states them with their sources:
//  1. every QuantizeLinear / DequantizeLinear is INT8 with constant zero points all 0 and
//     constant scales all > 0; an activation's scale is one value;
//  2. a quantized Conv / ConvTranspose / Gemm / MatMul (its weight comes from a
//     DequantizeLinear) reads its activation from a DequantizeLinear and its weight from
//     FLOAT constant -> QuantizeLinear -> DequantizeLinear, per channel only on the output-channel
//     axis (0 for Conv, Gemm with transB; 1 for MatMul, Gemm without), per tensor for
//     ConvTranspose; its bias is a FLOAT constant, never a DequantizeLinear; a MatMul of two
//     activations (attention) takes both from DequantizeLinears, per tensor;
//  3. no QuantizeLinear sits between a weighted op and the BatchNormalization or activation
//     that reads it;
//  4. a residual Add reading a quantized weighted op's (or its activation's) output takes its
//     other operand from a DequantizeLinear.
// Ops kept float (keep_float, the layer analysis' partial conversions) are TensorRT's to run in
// float: the rules bind the quantized ops only.
#ifndef QFUSE_QUANT_PLACEMENT_CHECK_H_
#define QFUSE_QUANT_PLACEMENT_CHECK_H_

#include "absl/status/status.h"
#include "ir/graph.h"

namespace qfuse::quant {

// OK, or FailedPrecondition naming the first node that breaks a rule and the rule.
absl::Status CheckTensorRtPlacement(const ir::Graph& graph);

}  // namespace qfuse::quant

#endif  // QFUSE_QUANT_PLACEMENT_CHECK_H_
