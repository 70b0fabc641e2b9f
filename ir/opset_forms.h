// Opset differences, handled in one place. At import every operator is rewritten to
// its canonical form (the opset-13 signature: Clip bounds, Squeeze/Unsqueeze/ReduceSum
// axes, Split sizes, Pad pads, Slice bounds and Dropout ratio as inputs; Upsample and
// Resize-10 as Resize-13; Softmax family with single-axis semantics), so no pass or
// kernel ever checks an opset number. Export converts back to the target opset's form.
#ifndef QFUSE_IR_OPSET_FORMS_H_
#define QFUSE_IR_OPSET_FORMS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "ir/graph.h"

namespace qfuse::ir {

// Rewrites nodes of a graph imported at `opset` into canonical form.
absl::Status NormalizeOpsetForms(Graph* graph, int64_t opset);

// Rewrites canonical nodes into the signatures of `target_opset` (for export); an op newer
// than the target is written as its standard equivalent (HardSwish below opset 14 as
// Mul(x, HardSigmoid(x, alpha = 1/6, beta = 1/2))). Fails,
// naming the node, when a form cannot be expressed at that opset (e.g. a Clip bound
// that is not a constant, for opset < 11).
absl::Status ConvertToOpsetForms(Graph* graph, int64_t target_opset);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_OPSET_FORMS_H_
