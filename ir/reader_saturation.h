// Which values reach only readers that saturate: Sigmoid, Tanh, HardSigmoid and Clip with two
// bounds, directly or through ops that only move, select, take the max of or interpolate
// between their elements. Beyond a magnitude B such a reader's output no longer changes (Clip,
// HardSigmoid) or changes by at most 2^-10 of its output range (Sigmoid, Tanh), so a grid for
// the value need not reach past B. IS-Net's side outputs (a Conv, a linear Resize, a Sigmoid)
// reach -1366 where the Sigmoid is 0 beyond -7 (docs/zoo.md, thirty-second session).
#ifndef QFUSE_IR_READER_SATURATION_H_
#define QFUSE_IR_READER_SATURATION_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace qfuse::ir {

// ln(1023): 1 - Sigmoid(B) = 2^-10, its output range [0, 1] times 2^-10.
inline constexpr float kSigmoidSaturation = 6.930494f;
// ln(1023) / 2: 1 - Tanh(B) = 2^-9, its output range [-1, 1] times 2^-10.
inline constexpr float kTanhSaturation = 3.465247f;

struct ReaderBound {
  float magnitude = 0;  // B > 0: clipping the value to [-B, B] keeps every reader's output as above
  std::string reader;   // the op type of the saturating reader that sets B ("Sigmoid", ...)
};

using ReaderBounds = absl::flat_hash_map<const Value*, ReaderBound>;

// The values (not graph outputs, not constants) whose every use is one of:
//   - input 0 of a saturating reader: Sigmoid (B = kSigmoidSaturation), Tanh (kTanhSaturation),
//     HardSigmoid(alpha, beta) (B = max(|beta / alpha|, |(1 - beta) / alpha|), exact), Clip with
//     constant lower and upper bounds, neither NaN (B = max(|lo|, |hi|), exact);
//   - the data input of an op whose data outputs all have a bound here: the data-movement ops
//     (Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Split, Gather, Tile,
//     Expand, DepthToSpace, SpaceToDepth, Concat, a Cast to the input's own type), the max
//     pools (MaxPool whose Indices nothing reads, GlobalMaxPool, ReduceMax, ReduceMin), where B
//     carries over exactly; and Resize / Upsample other than cubic. A linear mode mixes
//     neighbours, so an output between a value clipped at -B and a positive neighbour can leave
//     the saturated range: the bound is then approximate at steep transitions.
// Shape and Size read no element: their uses bound nothing and do not count. B is the largest of
// the other uses' bounds.
absl::StatusOr<ReaderBounds> SaturatingReaderBounds(const Graph& graph);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_READER_SATURATION_H_
