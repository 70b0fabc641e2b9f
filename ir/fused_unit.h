// The quantized unit: one IR node standing for Conv | ConvTranspose | Gemm | MatMul(+bias)
// -> [Add residual] -> [activation]. Once quantized, only its output is requantized; the
// accumulator, residual add and activation stay in high precision. The float runtime
// executes it too; export writes it back as its standard ops.
#ifndef QFUSE_IR_FUSED_UNIT_H_
#define QFUSE_IR_FUSED_UNIT_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/logistic.h"

namespace qfuse::ir {

inline constexpr char kQfuseDomain[] = "qfuse";
inline constexpr char kUnitOpType[] = "QuantUnit";

// Input positions of a unit node. Bias and residual may be omitted (nullptr).
enum UnitInput : int { kUnitX = 0, kUnitW = 1, kUnitBias = 2, kUnitResidual = 3 };

// The op a unit is built around: the one reading its weights.
enum class UnitBaseOp { kConv, kConvTranspose, kGemm, kMatMul };
inline constexpr UnitBaseOp kUnitBaseOps[] = {UnitBaseOp::kConv, UnitBaseOp::kConvTranspose, UnitBaseOp::kGemm,
                                              UnitBaseOp::kMatMul};

// The ONNX op type: "Conv", "ConvTranspose", "Gemm", "MatMul".
const char* UnitBaseOpName(UnitBaseOp op);
// The base op named `op_type`, or nullopt.
std::optional<UnitBaseOp> ParseUnitBaseOp(absl::string_view op_type);
// The base op `node` is: a default-domain Conv, ConvTranspose, Gemm or MatMul; else nullopt.
std::optional<UnitBaseOp> UnitBaseOpOf(const Node& node);
// MatMul has no bias input: its bias is an Add after it (the unit's kUnitBias input; a
// separate Add once expanded).
inline bool BiasFollowsBase(UnitBaseOp op) { return op == UnitBaseOp::kMatMul; }
// The axis of the weights that indexes output channels, given the base op's attributes:
// 0 for Conv ([Cout, Cin/g, k...]) and Gemm with transB ([N, K]), 1 for Gemm ([K, N]),
// MatMul ([K, N]) and ConvTranspose with one group ([Cin, Cout, k...]); -1 for a grouped
// ConvTranspose, whose weights have no such axis.
absl::StatusOr<int64_t> WeightOutputChannelAxis(UnitBaseOp op, const AttributeMap& attrs);

// HardSwish's alpha, 1/6 rounded to float32 (ONNX HardSwish-14's function body).
inline constexpr float kHardSwishAlpha = 1.f / 6.f;

// The activation of a unit. kRelu6 is exactly Clip(0, 6); any other constant bounds are
// kClip. The clamp kinds (kNone..kClip) are a clamp of the pre-activation value; the others
// are non-linear:
//   kHardSwish    x * max(0, min(1, x * fl(1/6) + 1/2)) (ONNX HardSwish: its function body is
//                 HardSigmoid(alpha 1/6, beta 1/2) times x, as onnxruntime computes it: a float32
//                 product with fl(1/6), then the sum; x / 6 rounds differently for some x)
//   kHardSigmoid  max(0, min(1, alpha * x + beta))      (ONNX HardSigmoid; defaults 0.2, 0.5)
//   kSigmoid      1 / (1 + exp(-x))
//   kSilu         x * sigmoid(x)                        (torch exports Sigmoid + Mul)
//   kLeakyRelu    x < 0 ? alpha * x : x                 (ONNX LeakyRelu; default 0.01)
enum class UnitActivation { kNone, kRelu, kRelu6, kClip, kHardSwish, kHardSigmoid, kSigmoid, kSilu, kLeakyRelu };

// The unit's own attributes; every other attribute belongs to the base op (Conv's
// strides/pads/..., Gemm's alpha/beta/transA/transB) and is kept verbatim.
inline constexpr char kUnitBaseOpAttr[] = "qfuse_base_op";        // UnitBaseOpName()
inline constexpr char kUnitActivationAttr[] = "qfuse_activation";  // UnitActivationName()
inline constexpr char kUnitClipMinAttr[] = "qfuse_clip_min";        // kClip only
inline constexpr char kUnitClipMaxAttr[] = "qfuse_clip_max";        // kClip only
inline constexpr char kUnitAlphaAttr[] = "qfuse_alpha";             // kHardSigmoid, kLeakyRelu
inline constexpr char kUnitBetaAttr[] = "qfuse_beta";               // kHardSigmoid

// A clamp [lo, hi] in real units; lowest() / max() where unbounded.
struct ClampRange {
  float lo;
  float hi;
};

struct UnitSpec {
  UnitBaseOp base_op = UnitBaseOp::kConv;
  UnitActivation activation = UnitActivation::kNone;
  float clip_min = 0.f;  // bounds for kRelu6 (0, 6) and kClip
  float clip_max = 0.f;
  float alpha = 0.f;  // kHardSigmoid (slope), kLeakyRelu (negative slope)
  float beta = 0.f;   // kHardSigmoid (offset)

  // The clamp of a clamp activation (IsClampActivation): kNone unbounded, kRelu [0, max()],
  // kRelu6 and kClip [clip_min, clip_max]; unbounded for the non-linear ones.
  ClampRange ClampBounds() const;
};

// The activation fields of Clip(lo, hi): kRelu6 for exactly (0, 6), else kClip.
UnitSpec ClipSpec(float lo, float hi);

// "none", "relu", "relu6", "clip", "hard_swish", "hard_sigmoid", "sigmoid", "silu", "leaky_relu".
const char* UnitActivationName(UnitActivation activation);

// True for kNone, kRelu, kRelu6 and kClip: the activation is the clamp spec.ClampBounds().
bool IsClampActivation(UnitActivation activation);

bool IsUnit(const Node& node);

// The unit's own attributes: the one encoding of a UnitSpec, written by every pass that
// forms a unit (WriteUnitSpec sets base op, activation and only the activation's
// parameters) and read back by every consumer (ReadUnitSpec validates them).
void WriteUnitSpec(const UnitSpec& spec, AttributeMap* attrs);
absl::StatusOr<UnitSpec> ReadUnitSpec(const Node& node);
// The activation fields alone (kUnitActivationAttr and its parameters; base_op left kConv),
// for nodes that carry an activation without being a unit (the integer QLinearActivation).
absl::StatusOr<UnitSpec> ReadUnitActivation(const Node& node);

// The unit's activation of one float value (the formulas above; float32 arithmetic, the
// same expressions as the float Relu/Clip/HardSwish/HardSigmoid/Sigmoid/LeakyRelu kernels;
// the sigmoid is onnxruntime's, ir/logistic.h).
inline float ApplyUnitActivation(const UnitSpec& spec, float v) {
  switch (spec.activation) {
    case UnitActivation::kNone: return v;
    case UnitActivation::kRelu: return v > 0.f ? v : 0.f;
    case UnitActivation::kRelu6:
    case UnitActivation::kClip: return std::min(std::max(v, spec.clip_min), spec.clip_max);
    case UnitActivation::kHardSwish: return v * std::max(0.f, std::min(1.f, v * kHardSwishAlpha + 0.5f));
    case UnitActivation::kHardSigmoid: return std::max(0.f, std::min(1.f, spec.alpha * v + spec.beta));
    case UnitActivation::kSigmoid: return Logistic(v);
    case UnitActivation::kSilu: return v * Logistic(v);
    case UnitActivation::kLeakyRelu: return v < 0.f ? spec.alpha * v : v;
  }
  return v;
}

// ApplyUnitActivation on every element, in place (the switch taken once); `vector`: the
// caller's ISA cap allows AVX2 (the logistic rows' AVX2 + FMA lanes and HardSwish /
// HardSigmoid's AVX2 lanes, the same bytes). The caller checks that the CPU has AVX2.
void ApplyUnitActivation(const UnitSpec& spec, absl::Span<float> values, bool vector);

// Base-op attributes of a unit (its own qfuse_* attributes removed).
AttributeMap BaseOpAttributes(const Node& node);

// Rewrites every unit into its standard ops (base op, Add for MatMul bias, Add for the
// residual, then Relu | Clip | HardSwish | HardSigmoid | Sigmoid | Sigmoid + Mul (SiLU) |
// LeakyRelu), keeping the unit's output value and name. HardSwish is written as itself;
// export below opset 14 rewrites it (ir/opset_forms.h).
absl::Status ExpandUnits(Graph* graph);
// ExpandUnits for one unit node; returns the base op node, which takes the unit's name.
absl::StatusOr<Node*> ExpandUnit(Graph* graph, Node* unit);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_FUSED_UNIT_H_
