// Pattern (k) of the QDQ lowering (runtime/int8/qdq_lowering.h): a non-linear activation
// between DequantizeLinear and QuantizeLinear, in any form of ir::MatchUnitActivation
// (HardSwish, HardSigmoid, Sigmoid, LeakyRelu alone; Sigmoid + Mul as SiLU; HardSigmoid(1/6,
// 1/2) + Mul as HardSwish), on a per-tensor INT8/UINT8 activation => qfuse's QLinearActivation
// (int8_ops.h), one byte lookup instead of four float passes. Its table is the float ops' own
// arithmetic on each of the 256 inputs (unary_requantization.h's ActivationTable), so the
// bytes are the ones the group writes. The `bn` and `none` levels leave these activations
// between requantizations (EfficientNet's SiLU, MobileNetV3's HardSwish).
#ifndef QFUSE_RUNTIME_INT8_ACTIVATION_LOOKUP_H_
#define QFUSE_RUNTIME_INT8_ACTIVATION_LOOKUP_H_

#include <optional>
#include <vector>

#include "ir/fused_unit.h"
#include "ir/graph.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/group_replacer.h"
#include "runtime/int8/qdq_operands.h"

namespace qfuse::runtime::int8 {

struct ActivationLookupMatch {
  std::vector<ir::NodeId> nodes;  // the activation's ops, last first
  ir::NodeId anchor = ir::kNoNode;
  DqOperand x;
  Sink sink;
  ir::UnitSpec activation;
};

// Anchored at the activation's first op (HardSwish, HardSigmoid, Sigmoid or LeakyRelu).
class ActivationLookupPattern : public ir::rewrite::Pattern<ActivationLookupMatch> {
 public:
  explicit ActivationLookupPattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<ActivationLookupMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const ActivationLookupMatch& m) const override;

 private:
  const Replacer& replacer_;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_ACTIVATION_LOOKUP_H_
