// A quantized unit (ir/fused_unit.h) written as standard ops, matched forward from its base op:
//   Conv | ConvTranspose | Gemm | MatMul -> [Add bias] (MatMul only) -> [Add residual]
//   -> [activation: any form of ir::MatchUnitActivation]
// One matcher for unit formation on the float graph (fusion/passes/form_units.h) and for the
// integer lowering of QDQ units (runtime/int8/qdq_lowering.h); each caller says through
// UnitChainOptions which bias, residual and activation it takes.
#ifndef QFUSE_IR_UNIT_CHAIN_MATCH_H_
#define QFUSE_IR_UNIT_CHAIN_MATCH_H_

#include <functional>
#include <optional>
#include <vector>

#include "ir/fused_unit.h"
#include "ir/graph.h"

namespace qfuse::ir {

struct UnitChainOptions {
  // Whether `bias`, the other operand of the Add reading MatMul `base`'s output, is a bias
  // the unit absorbs. Unset: MatMul's bias Add is never absorbed.
  std::function<bool(const Node& base, const Value& bias)> matmul_bias;
  // Whether `residual`, the other operand of the Add reading the accumulator `acc` (the
  // base op's or its bias Add's output) and writing `sum`, is a residual the unit absorbs
  // (the shape rule is the caller's: see ResidualShapeFits). Unset: no residual.
  std::function<bool(const Value& residual, const Value& acc, const Value& sum)> residual;
  // Whether the unit absorbs `activation` (activation fields only). Unset: every form.
  std::function<bool(const UnitSpec& activation)> activation;
};

// The matched chain, by node id: a match made on a const graph names its nodes, and only the
// rewrite, holding the mutable graph, resolves them (Graph::FindNode).
struct UnitChain {
  NodeId base = kNoNode;          // Conv, ConvTranspose, Gemm or MatMul
  NodeId bias_add = kNoNode;      // MatMul's bias Add, or kNoNode
  int bias_index = 0;             // which input of bias_add is the bias
  NodeId residual_add = kNoNode;  // or kNoNode
  int residual_index = 0;         // which input of residual_add is the residual
  std::vector<NodeId> activation;  // the activation's ops, last first (empty: none)
  UnitSpec spec;                   // base op and activation

  // The chain's nodes in order, base first.
  std::vector<NodeId> Nodes() const;
};

// The longest chain starting at `base` that `options` allows, each absorbed op the sole
// reader of the value before it (not a graph output); nullopt when `base` is no base op
// (ir::UnitBaseOpOf). The chain may be the base op alone.
std::optional<UnitChain> MatchUnitChain(const Node& base, const UnitChainOptions& options);

// The same chain for a base op written as several nodes ending in `head` (the integer-head
// form ConvInteger -> [Add bias] -> DequantizeLinear, quant/integer_heads.h): the chain
// continues from head's output (a residual, then an activation); chain.base is `head`,
// chain.spec.base_op is `op`, and MatMul's bias Add is not looked for.
std::optional<UnitChain> MatchUnitChainAfter(const Node& head, UnitBaseOp op, const UnitChainOptions& options);

// The value the chain computes: the output of its last node.
const Value* UnitChainOutput(const Graph& graph, const UnitChain& chain);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_UNIT_CHAIN_MATCH_H_
