// Structural equality of two graphs by names: inputs, constants (bit for bit), nodes
// (op, attributes, wiring) and outputs. Used to prove import/export round trips.
#ifndef QFUSE_IR_GRAPH_COMPARE_H_
#define QFUSE_IR_GRAPH_COMPARE_H_

#include "absl/status/status.h"
#include "ir/graph.h"

namespace qfuse::ir {

// OK when equal; otherwise a status describing the first difference found.
absl::Status CompareGraphs(const Graph& expected, const Graph& actual);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_GRAPH_COMPARE_H_
