// The one table of which operators have an int8 form in qfuse's QDQ models: read by the QDQ
// converter (where Q/DQ pairs go, quant/qdq_converter.cc) and by the integer lowering (which
// DQ -> op -> Q patterns become integer kernels, runtime/int8/qdq_lowering.cc), so the two
// cannot disagree about an op silently running in float.
#ifndef QFUSE_IR_INT8_FORMS_H_
#define QFUSE_IR_INT8_FORMS_H_

#include "ir/graph.h"

namespace qfuse::ir {

// Data movement: the output keeps the input's quantization parameters and the int8 values
// pass through unchanged. Resize only in mode "nearest" (each output element a copy of one
// input element; DBNet-style detectors upsample their feature pyramid so).
inline constexpr const char* kKeepsInputQuantizationOps[] = {"MaxPool",   "Reshape",  "Flatten", "Transpose", "Squeeze",
                                                             "Unsqueeze", "Identity", "Resize"};
bool KeepsInputQuantization(const Node& n);

// Int8 in and out, output scale derived from the input's.
inline constexpr const char* kAveragePoolOps[] = {"GlobalAveragePool", "AveragePool"};
bool IsAveragePool(const Node& n);

// Clamps: int8 in and out, the activation's bounds applied to the quantized values.
inline constexpr const char* kClampOps[] = {"Relu", "Clip"};
bool IsClamp(const Node& n);

// Concatenation: int8 inputs requantized to the output's parameters.
inline constexpr const char* kConcatOps[] = {"Concat"};
bool IsConcat(const Node& n);

// Ops with an int8 form: quantized units, Conv, ConvTranspose, Gemm, MatMul, Add of two
// activations (an Add of a constant runs float), Relu, Clip, the average pools, Concat and
// the data-movement ops. The rest run in float between DequantizeLinear and QuantizeLinear,
// but for a Mul of two activations that the converter leaves between Q/DQ because both its
// neighbours are int8 (a squeeze-excitation scale between two units): onnxruntime fuses that
// into QLinearMul, so the lowering does too (runtime/int8/int8_ops.h). Mul has no int8 form
// of its own: one next to a float op (x * Sigmoid(x)) gets no Q/DQ pair.
bool HasInt8Form(const Node& n);

// Ops with an int8 form that compute nothing worth an integer kernel on their own (Relu, Clip,
// Concat, Add, the average pools, data movement): they pay off only between int8 neighbours.
bool IsInt8PassThrough(const Node& n);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_INT8_FORMS_H_
