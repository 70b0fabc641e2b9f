// Which values of a graph are bounded below by construction (every element >= L <= 0, or NaN,
// whatever the graph's inputs), and which of them are non-negative (L = 0). Target qfuse stores
// these on a uint8 grid of [max(L, -T), T] (zero point 0 and scale T / 255 when L = 0): about
// twice the levels of the symmetric grid, whose negative half they leave (almost) unused.
// Calibration searches their thresholds over 256 levels.
#ifndef QFUSE_IR_VALUE_SIGN_H_
#define QFUSE_IR_VALUE_SIGN_H_

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/fused_unit.h"
#include "ir/graph.h"

namespace qfuse::ir {

// Lower bounds of HardSwish (least value -0.375, x * relu6(x + 3) / 6 at x = -1.5) and SiLU
// (-0.2784645, x * sigmoid(x) at x = -1.2784645), a little below so that float rounding and
// the logistic's approximation (ir/logistic.h) stay above them.
inline constexpr float kHardSwishMin = -0.376f;
inline constexpr float kSiluMin = -0.279f;

// The least output of the activation for any input (nullopt: unbounded): 0 for Relu,
// HardSigmoid and Sigmoid; min(lower clip bound, 0) for Relu6 and Clip; kHardSwishMin,
// kSiluMin.
std::optional<float> ActivationLowerBound(const UnitSpec& spec);
// Whether ActivationLowerBound is 0: Relu, Relu6, Clip with a lower bound >= 0, HardSigmoid,
// Sigmoid.
bool IsNonNegativeActivation(const UnitSpec& spec);

// A lower bound L <= 0 of every element of a value, whatever the graph's inputs.
using ValueLowerBounds = absl::flat_hash_map<const Value*, float>;

// The values with a lower bound by construction, in one pass in topological order:
//   - outputs of units and of activation nodes with an ActivationLowerBound, and of Softmax,
//     Abs, Exp, Softplus, Sqrt (0; not LogSoftmax);
//   - values that move, select, pool, average or take the max/min of one bounded input (the
//     data-movement ops of ir/int8_forms.h, the pools, Slice, Split, Gather, Tile, Expand,
//     DepthToSpace, SpaceToDepth, ReduceMax/Min/Mean; Resize and Upsample other than cubic;
//     Pad, with the pad value): the input's bound; ReduceSum only of a non-negative input;
//   - Concat and Min of bounded operands (a constant counts, with its least element): the
//     least bound; Add: the sum of the bounds; Mul: 0 when both operands are non-negative;
//     Max: the largest bound among its bounded operands.
// Graph inputs are never bounded (the data decides).
absl::StatusOr<ValueLowerBounds> LowerBounds(const Graph& graph);

// The LowerBounds entries whose bound is 0 (the non-negative values).
absl::StatusOr<ValueLowerBounds> NonNegativeValues(const Graph& graph);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_VALUE_SIGN_H_
