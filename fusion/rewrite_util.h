// Helpers shared by rewrites: replacing a matched chain's output while keeping its name
// (graph outputs must keep their names), and reading constant inputs.
#ifndef QFUSE_FUSION_REWRITE_UTIL_H_
#define QFUSE_FUSION_REWRITE_UTIL_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ir/graph.h"

namespace qfuse::fusion {

// Moves every use of `old_value` to `new_value`, removes `dead_nodes` (consumers before
// producers are not required), and gives `new_value` the old value's name and type.
absl::Status ReplaceAndRemove(ir::Graph* graph, ir::Value* old_value, ir::Value* new_value,
                              absl::Span<ir::Node* const> dead_nodes);

// The constant data of `node`'s input `index`, or nullptr when absent or not constant.
const ir::Tensor* ConstantInput(const ir::Node& node, int index);

// Float values of a FLOAT constant input with exactly `count` elements, else nullopt.
std::optional<std::vector<float>> FloatConstant(const ir::Node& node, int index, int64_t count);

// The node reading `value`, when it has exactly one consumer and is not a graph output.
ir::Node* SoleConsumer(const ir::Value& value);

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_REWRITE_UTIL_H_
