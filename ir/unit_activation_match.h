// The standard-op forms of a unit's activation (ir/fused_unit.h), matched forward from the
// pre-activation value. One matcher for unit formation (fusion/passes/form_units.h) and
// QDQ lowering (runtime/int8/qdq_lowering.h), so both accept the same patterns.
#ifndef QFUSE_IR_UNIT_ACTIVATION_MATCH_H_
#define QFUSE_IR_UNIT_ACTIVATION_MATCH_H_

#include <optional>
#include <vector>

#include "ir/fused_unit.h"
#include "ir/graph.h"

namespace qfuse::ir {

// The activation one default-domain node computes on its input 0 (activation fields only):
//   Relu -> kRelu; Clip with absent or constant FLOAT scalar bounds -> ClipSpec(lo, hi)
//   (kRelu6 or kClip, in either order); HardSwish, HardSigmoid, Sigmoid, LeakyRelu (their
//   attributes, ONNX defaults when absent) -> the kind of that name. Else nullopt.
std::optional<UnitSpec> UnitActivationOf(const Node& n);

struct UnitActivationMatch {
  UnitSpec spec;             // activation fields only (base_op not set)
  std::vector<Node*> nodes;  // the activation's ops, last first
  Value* output = nullptr;   // the activated value
};

// The activation reading `x`, when x's readers are exactly one of:
//   Relu(x)                                   -> kRelu
//   Clip(x, lo, hi), absent or constant FLOAT scalar bounds, lo <= hi
//                                             -> ClipSpec(lo, hi)
//   HardSwish(x)                              -> kHardSwish
//   HardSigmoid(x) and Mul(x, h), h its output, alpha = 1/6 (within 1e-6) and beta = 1/2
//                                             -> kHardSwish (torch's opset < 14 export)
//   Sigmoid(x) and Mul(x, s), s its output    -> kSilu
//   HardSigmoid(x) | Sigmoid(x) | LeakyRelu(x) alone -> kHardSigmoid | kSigmoid | kLeakyRelu
// Mul's operands may be in either order. `x` and the gate (h, s) must have no other
// reader and not be graph outputs. HardSigmoid(x) * x with other parameters matches
// nothing (the Mul needs x itself, so the unit cannot end at the gate).
std::optional<UnitActivationMatch> MatchUnitActivation(const Value& x);

// Whether `residual` can be a unit's residual for the accumulator `acc`: the residual is added
// without broadcasting, so the two must have one shape. Known ranks must agree; each dim pair
// must be equal known values, the same symbol, or both not known (the H and W of a model
// exported with dynamic axes). Symbols ONNX shape inference invents for unknown dims
// ("unk__N", a fresh one per op output) count as not known. A pair that differs at run
// time is then refused by the unit kernels with a one-line error naming both shapes.
bool ResidualShapeFits(const Value& residual, const Value& acc);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_UNIT_ACTIVATION_MATCH_H_
