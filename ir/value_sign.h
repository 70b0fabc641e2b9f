// Which values of a graph are non-negative by construction: every element is >= 0 (or NaN)
// whatever the graph's inputs. Target qfuse stores these on the unsigned grid (uint8, zero
// point 0, scale T / 255: twice the levels of the symmetric grid), and calibration searches
// their thresholds over 256 levels.
#ifndef QFUSE_IR_VALUE_SIGN_H_
#define QFUSE_IR_VALUE_SIGN_H_

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "ir/fused_unit.h"
#include "ir/graph.h"

namespace qfuse::ir {

// Whether the activation's output is >= 0 for every input: Relu, Relu6, Clip with a lower
// bound >= 0, HardSigmoid, Sigmoid.
bool IsNonNegativeActivation(const UnitSpec& spec);

// The non-negative values, in one pass in topological order:
//   - outputs of units and of activation nodes (ir/unit_activation_match.h) whose activation
//     IsNonNegativeActivation, and of Softmax, Abs, Exp, Softplus, Sqrt (not LogSoftmax);
//   - outputs that only move, select, pool or reduce a non-negative input 0 (the data-movement
//     ops of ir/int8_forms.h, the average and max pools, Slice, Split, Gather, Tile, Expand,
//     DepthToSpace, SpaceToDepth, ReduceMax/Min/Mean/Sum, Resize and Upsample other than
//     cubic, Pad other than a negative constant);
//   - Concat, Add, Mul and Min of non-negative operands (a constant counts when every element
//     is >= 0), Max with at least one.
// Graph inputs are never in it (the data decides their sign).
absl::StatusOr<absl::flat_hash_set<const Value*>> NonNegativeValues(const Graph& graph);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_VALUE_SIGN_H_
