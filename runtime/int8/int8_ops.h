// qfuse's integer operators (domain "qfuse"), made by the QDQ lowering
// (runtime/int8/qdq_lowering.h) from DequantizeLinear -> float op -> QuantizeLinear
// groups. Every int8/uint8 input and output is a value whose type carries its
// QuantParams (per tensor; weights per tensor or per output channel); the node's
// attributes hold only the op's own settings and the requantization mode. Arithmetic:
// runtime/int8/output_stage.h, plus the notes per op below.
#ifndef QFUSE_RUNTIME_INT8_INT8_OPS_H_
#define QFUSE_RUNTIME_INT8_INT8_OPS_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "numerics/requantize.h"
#include "runtime/int8/value_params.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::int8 {

// QLinearUnit(x, w, [bias], [residual]) -> y: the quantized unit of ir/fused_unit.h in
// integers. x int8/uint8; w a constant INT8 tensor in the base op's layout (Conv
// [Cout, Cin/group, k...], Gemm [K, N] or [N, K] with transB, MatMul [K, N]); bias a
// constant INT32 [Cout] in units of s_x * s_w[c]; residual int8/uint8 of y's shape.
// acc = sum (x - zp_x) * (w - zp_w) + bias is exact in int32 (checked at Prepare);
// y = one output stage of (acc, residual - zp_r) with a clamp activation as clamp bounds,
// or for a non-linear activation (HardSwish, Sigmoid, ...) the float epilogue of
// output_stage.h (dequantize, activation, QuantizeLinear); y is int8/uint8, or FLOAT
// (dequantized) for a unit that ends the graph.
// Attributes: the base op's own (strides, pads, group, transB, ...) and ir/fused_unit.h's
// unit attributes (ir::WriteUnitSpec).
inline constexpr char kQLinearUnitOp[] = "QLinearUnit";
// QLinearAdd(a, b) -> y, numpy broadcasting: onnxruntime's QLinearAdd (numerics/requantize.h)
// in mode onnx, the two-term stage of a - zp_a and b - zp_b in mode fixed.
inline constexpr char kQLinearAddOp[] = "QLinearAdd";
// QLinearMul(a, b) -> y, numpy broadcasting: onnxruntime's QLinearMul (numerics/requantize.h)
// in mode onnx, the output stage of (a - zp_a)(b - zp_b) at scale s_a * s_b in mode fixed. A
// Mul has no int8 form of its own (ir/int8_forms.h): the lowering takes one that the QDQ graph
// has between DequantizeLinear inputs and a QuantizeLinear (a squeeze-excitation scale between
// two units), as onnxruntime's QDQ fusion does.
inline constexpr char kQLinearMulOp[] = "QLinearMul";
// QLinearClamp(x) -> y: Relu / Clip between requantizations: y = stage(x - zp_x) with
// float attributes "min" and "max" as activation bounds.
inline constexpr char kQLinearClampOp[] = "QLinearClamp";
// QLinearActivation(x) -> y: a non-linear activation between requantizations (the unit
// activation attributes of ir/fused_unit.h: HardSwish, HardSigmoid, Sigmoid, SiLU,
// LeakyRelu), looked up per byte in unary_requantization.h's ActivationTable: the bytes of
// DequantizeLinear -> the activation's float ops -> QuantizeLinear, as onnxruntime runs them.
inline constexpr char kQLinearActivationOp[] = "QLinearActivation";
// QLinearLookup(x) -> y: any chain of elementwise float ops of x alone between
// requantizations (elementwise_lookup.h), as the 256-entry INTS attribute "table": raw input
// byte -> raw output byte, computed by the lowering from the chain's own float ops.
inline constexpr char kQLinearLookupOp[] = "QLinearLookup";
inline constexpr char kLookupTableAttr[] = "table";
// QLinearChannelMap(x_0, ..., x_n, scale, shift) -> y (attributes "clamp": "relu" or "clip",
// absent without one; "min", "max": a clip's bounds): the 4-D x_i concatenated along axis 1,
// then per output channel c y = QuantizeLinear(clamp(DQ(x) * scale[c] + shift[c])), each step a
// float32 operation as DequantizeLinear -> [Concat] -> Mul -> Add -> [Relu | Clip] ->
// QuantizeLinear computes it (a batch norm that did not fold, before its clamp;
// channel_map_fusion.h). An x_i may be FLOAT (a Concat input that was not quantized): its
// channels skip the DequantizeLinear. scale and shift: FLOAT constants of one value or one per
// channel. A 256-byte table per channel of a quantized input; plain NCHW in and out.
inline constexpr char kQLinearChannelMapOp[] = "QLinearChannelMap";
// QLinearAveragePool(x) -> y (AveragePool attributes; 1-3 spatial dims, no dilations):
// S = sum of (x - zp_x) over the window's counted positions in int32, y =
// stage(S) with multiplier s_x / (s_y * n), n the divisor of ONNX AveragePool
// (count_include_pad decides whether padding counts). One multiplier per divisor.
inline constexpr char kQLinearAveragePoolOp[] = "QLinearAveragePool";
// QLinearGlobalAveragePool(x) -> y: the same over all spatial positions.
inline constexpr char kQLinearGlobalAveragePoolOp[] = "QLinearGlobalAveragePool";
// QLinearConcat(x_0, ..., x_n) -> y ("axis"): each input requantized to y's params,
// y = stage_i(x_i - zp_i) (a copy when the params are equal).
inline constexpr char kQLinearConcatOp[] = "QLinearConcat";
// QLinearSoftmax(x) -> y ("axis"), x and y UINT8: onnxruntime's com.microsoft.QLinearSoftmax,
// which its QDQ fusion makes of DequantizeLinear -> Softmax -> QuantizeLinear, computed as it
// computes it (runtime/int8/qlinear_softmax.cc): a float table e[i] of exp((i - 255) * s_x)
// times a constant factor, per slice along the axis the float sum S of e[x + 255 - max x] in
// axis order, y = min(255, nearbyint(e * floor(1 / s_y) / S) + zp_y). Mode onnx only.
inline constexpr char kQLinearSoftmaxOp[] = "QLinearSoftmax";
// Gelu(x) -> y, FLOAT (not an integer op: the lowering's float-region pattern (j),
// gelu_fusion.h, makes it), run by the unary float kernels (runtime/kernels/elementwise):
// onnxruntime's fused Gelu arithmetic (ir::GeluRow), or with kGeluDivisorAttr the five ops'
// own arithmetic in one pass (ir::GeluChainRow; kGeluHalfFirstAttr 1: Mul(Mul(x, 0.5), .)).
inline constexpr char kGeluOp[] = "Gelu";
inline constexpr char kGeluDivisorAttr[] = "qfuse_gelu_divisor";
inline constexpr char kGeluHalfFirstAttr[] = "qfuse_gelu_half_first";
// qfuse.SimplifiedLayerNormalization(X, Scale): onnxruntime's RMS norm (kernels/nn/nn.h), a
// float op the lowering makes (layer_norm_fusion.h).
inline constexpr char kSimplifiedLayerNormOp[] = "SimplifiedLayerNormalization";
// ChannelAffine(x, scale, shift) -> y, FLOAT (float_chain_fusion.h makes it of a float graph's
// Mul(x, scale) -> Add(., shift) [-> Relu] with [C, 1, ...] constants, the batch norm that
// cannot fold into a convolution): y = x * scale[c] + shift[c] along axis 1, each operation
// rounded on its own as Mul and Add round it, then Relu when kChannelAffineReluAttr is 1; one
// pass, in the channel-blocked layout too (runtime/onednn/blocked_kernels.h).
inline constexpr char kChannelAffineOp[] = "ChannelAffine";
inline constexpr char kChannelAffineReluAttr[] = "qfuse_relu";

// Requantization mode of every integer node: "onnx" or "fixed".
inline constexpr char kRequantizeModeAttr[] = "qfuse_requantize";
// QLinearUnit, int 1: the unit was lowered from the integer-head form (quant/integer_heads.h).
// w's scales are then the accumulator's dequantization scales d_a[c] = s_x * s_w[c] (x's
// scale is in them and x's own is not read), and mode onnx requantizes as that form computes:
// dequantize, add the residual, divide by s_y (output_stage.h).
inline constexpr char kDequantizedEpilogueAttr[] = "qfuse_dequantized_epilogue";
// QLinearUnit of base MatMul with a bias and/or a residual, mode onnx, int 1: computed as
// onnxruntime runs DequantizeLinear -> MatMul -> Add bias -> [Add residual] -> [activation] ->
// QuantizeLinear (a MatMul not followed directly by QuantizeLinear becomes its
// MatMulIntegerToFloat, and the Adds stay float), each step in float32:
//   v = float(acc) * float32(s_x * s_w[c]);  v = v + float(b[c]) * s_b[c];
//   v = v + float(r - zp_r) * s_r;  v = act(v);  y = QuantizeLinear(v) (v / s_y, half to even).
// kBiasScalesAttr (floats, one or per channel): s_b, the bias DequantizeLinear's scales.
inline constexpr char kMatMulToFloatAttr[] = "qfuse_matmul_to_float";
inline constexpr char kBiasScalesAttr[] = "qfuse_bias_scales";

// QLinearUnit, QLinearAdd or QLinearMul with a requantizing clamp folded in (the lowering's
// clamp folding, qdq_lowering.h): the node computes bytes of the clamp's input, type
// kFoldedStageTypeAttr (int, an ir::DataType), scale kFoldedStageScaleAttr (float) and zero
// point kFoldedStageZeroPointAttr (int), and maps each through the clamp's table
// (unary_requantization.h's ClampTable, bounds kFoldedClampMinAttr / kFoldedClampMaxAttr,
// floats) to y: the bytes QLinearClamp would write from them.
inline constexpr char kFoldedStageTypeAttr[] = "qfuse_folded_stage_type";
inline constexpr char kFoldedStageScaleAttr[] = "qfuse_folded_stage_scale";
inline constexpr char kFoldedStageZeroPointAttr[] = "qfuse_folded_stage_zero_point";
inline constexpr char kFoldedClampMinAttr[] = "qfuse_folded_clamp_min";
inline constexpr char kFoldedClampMaxAttr[] = "qfuse_folded_clamp_max";

// The clamp folded into a node (the kFolded* attributes above).
struct FoldedClamp {
  ActivationQuant stage;  // the node's own output quantization (the clamp's input)
  float min = 0, max = 0;  // the clamp's bounds in real units
};
// The node's folded clamp, or nullopt when it has none.
absl::StatusOr<std::optional<FoldedClamp>> ReadFoldedClamp(const ir::Node& node);

const char* RequantizeModeName(numerics::RequantizeMode mode);
absl::StatusOr<numerics::RequantizeMode> ReadRequantizeMode(const ir::Node& node);

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearUnitKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearAddKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearMulKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearClampKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearChannelMapKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearActivationKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearAveragePoolKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearConcatKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearSoftmaxKernel(const ir::Node& node);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_INT8_OPS_H_
