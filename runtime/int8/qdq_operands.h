// The quantized operands of a DequantizeLinear -> float op -> QuantizeLinear group in a QDQ
// graph, read without changing the graph (for the patterns of runtime/int8/qdq_lowering.h):
// activations and constants behind DequantizeLinear, and where a group ends (a
// QuantizeLinear, or a float graph output). Nodes are named by id; QuantizedInput resolves
// one for the rewrite.
#ifndef QFUSE_RUNTIME_INT8_QDQ_OPERANDS_H_
#define QFUSE_RUNTIME_INT8_QDQ_OPERANDS_H_

#include <optional>

#include "ir/graph.h"

namespace qfuse::runtime::int8 {

// A value read through DequantizeLinear `dq` with constant scale and zero point.
struct DqOperand {
  ir::NodeId dq = ir::kNoNode;
  ir::QuantParams params;  // axis set only for per-axis params, never negative
};

// A per-tensor quantized activation: an INT8/UINT8 value, not a constant, whose type's
// QuantParams (when set) agree with the DequantizeLinear's.
std::optional<DqOperand> MatchDqActivation(const ir::Value* v);

// A constant of `dtype` (INT8 weights, INT32 bias), per tensor or per axis.
std::optional<DqOperand> MatchDqConstant(const ir::Value* v, ir::DataType dtype);

// An INT32 value computed by the graph (the integer-head form's accumulator plus bias) behind
// DequantizeLinear with constant scales, per tensor or per axis, and zero point 0.
std::optional<DqOperand> MatchDqAccumulator(const ir::Value* v);

// The value `operand`'s DequantizeLinear reads, with the operand's QuantParams written into
// its type: what an integer op reads in place of the dequantized float.
ir::Value* QuantizedInput(ir::Graph* graph, const DqOperand& operand);

// The value `operand`'s DequantizeLinear reads, unchanged.
const ir::Value* DequantizeInput(const ir::Graph& graph, const DqOperand& operand);

// Where a group computing the float value y ends.
struct Sink {
  ir::NodeId q = ir::kNoNode;  // the QuantizeLinear, or kNoNode when y is a float graph output
  ir::QuantParams params;      // per tensor (QuantizeLinear only)
  ir::DataType qtype = ir::DataType::kUndefined;
};

// y is FLOAT, not a graph output, and read only as input 0 of a QuantizeLinear with
// constant per-tensor params of type INT8 or UINT8 (UINT8 when the zero point is absent).
std::optional<Sink> MatchQuantizeSink(const ir::Value& y);

// y is a FLOAT graph output that nothing reads.
std::optional<Sink> MatchOutputSink(const ir::Value& y);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_QDQ_OPERANDS_H_
