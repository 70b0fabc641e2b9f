// Pattern (m) of the QDQ lowering (runtime/int8/qdq_lowering.h): DequantizeLinear(x) -> any
// chain of elementwise float ops of x alone -> QuantizeLinear, x per-tensor INT8/UINT8 =>
// qfuse's QLinearLookup (int8_ops.h), one byte lookup instead of a float pass per op. The ops:
// Add, Sub, Mul and Div whose operands are chain values or FLOAT constants of one element (of
// rank at most x's), Relu, Clip with constant bounds, HardSigmoid, HardSwish and LeakyRelu;
// every intermediate read only inside the chain, the last one only by a per-tensor
// QuantizeLinear. Such chains sit between the units of models whose exporters write affines
// and activations out (PP-LCNet's learnable scalar affine around HardSwish written as
// HardSigmoid * x: DQ -> Mul -> Add -> HardSigmoid -> Mul -> Mul -> Add -> Q). The table
// evaluates the chain's own ops on each of the 256 dequantized inputs in float32, in graph
// order, with the arithmetic of qfuse's float kernels (IEEE single operations;
// ir::ApplyUnitActivation for the activations), so the bytes are the ones the ops write.
#ifndef QFUSE_RUNTIME_INT8_ELEMENTWISE_LOOKUP_H_
#define QFUSE_RUNTIME_INT8_ELEMENTWISE_LOOKUP_H_

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/group_replacer.h"
#include "runtime/int8/qdq_operands.h"

namespace qfuse::runtime::int8 {

struct ElementwiseLookupMatch {
  std::vector<ir::NodeId> nodes;  // the chain's ops, last first
  ir::NodeId anchor = ir::kNoNode;
  DqOperand x;
  Sink sink;
};

// Anchored at any op of the chain that reads the DequantizeLinear output.
class ElementwiseLookupPattern : public ir::rewrite::Pattern<ElementwiseLookupMatch> {
 public:
  explicit ElementwiseLookupPattern(const Replacer& replacer) : replacer_(replacer) {}

  // The op types a chain may hold.
  static std::vector<std::string> ChainOps();

 protected:
  std::optional<ElementwiseLookupMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const ElementwiseLookupMatch& m) const override;

 private:
  const Replacer& replacer_;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_ELEMENTWISE_LOOKUP_H_
