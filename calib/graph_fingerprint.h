// A stable 64-bit fingerprint of a graph (structure, attributes, constants), so a
// calibration table made for one graph is not silently applied to another.
#ifndef QFUSE_CALIB_GRAPH_FINGERPRINT_H_
#define QFUSE_CALIB_GRAPH_FINGERPRINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace qfuse::calib {

// 16 lowercase hex digits of FNV-1a 64 over a canonical description: inputs and
// outputs (names, dtypes), nodes in topological order (op, domain, name, input and
// output names, attributes), constants (name, dtype, dims, bytes).
absl::StatusOr<std::string> GraphFingerprint(const ir::Graph& graph);

}  // namespace qfuse::calib

#endif  // QFUSE_CALIB_GRAPH_FINGERPRINT_H_
