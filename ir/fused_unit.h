// The quantized unit: one IR node standing for Conv | ConvTranspose | Gemm | MatMul(+bias)
// -> [Add residual] -> [Relu | Clip(lo, hi)]. Once quantized, only its output is
// requantized; the accumulator, residual add and activation stay in high precision.
// The float runtime executes it too; export writes it back as its standard ops.
#ifndef QFUSE_IR_FUSED_UNIT_H_
#define QFUSE_IR_FUSED_UNIT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace qfuse::ir {

inline constexpr char kQfuseDomain[] = "qfuse";
inline constexpr char kUnitOpType[] = "QuantUnit";

// Input positions of a unit node. Bias and residual may be omitted (nullptr).
enum UnitInput : int { kUnitX = 0, kUnitW = 1, kUnitBias = 2, kUnitResidual = 3 };

// kRelu6 is exactly Clip(0, 6); any other constant bounds are kClip.
enum class UnitActivation { kNone, kRelu, kRelu6, kClip };

// The unit's own attributes; every other attribute belongs to the base op (Conv's
// strides/pads/..., Gemm's alpha/beta/transA/transB) and is kept verbatim.
inline constexpr char kUnitBaseOpAttr[] = "qfuse_base_op";        // "Conv", "ConvTranspose", "Gemm", "MatMul"
inline constexpr char kUnitActivationAttr[] = "qfuse_activation";  // "none", "relu", "relu6", "clip"
inline constexpr char kUnitClipMinAttr[] = "qfuse_clip_min";
inline constexpr char kUnitClipMaxAttr[] = "qfuse_clip_max";

struct UnitSpec {
  std::string base_op;
  UnitActivation activation = UnitActivation::kNone;
  float clip_min = 0.f;  // bounds for kRelu6 (0, 6) and kClip
  float clip_max = 0.f;
};

bool IsUnit(const Node& node);

// Reads and validates a unit node's own attributes.
absl::StatusOr<UnitSpec> ReadUnitSpec(const Node& node);

// Base-op attributes of a unit (its own qfuse_* attributes removed).
AttributeMap BaseOpAttributes(const Node& node);

// Rewrites every unit into its standard ops (base op, Add for MatMul bias, Add for the
// residual, Relu/Clip), keeping the unit's output value and name.
absl::Status ExpandUnits(Graph* graph);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_FUSED_UNIT_H_
