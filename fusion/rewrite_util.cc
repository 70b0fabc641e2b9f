#include "fusion/rewrite_util.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "base/status_macros.h"

namespace qfuse::fusion {

absl::Status ReplaceAndRemove(ir::Graph* graph, ir::Value* old_value, ir::Value* new_value,
                              absl::Span<ir::Node* const> dead_nodes) {
  const std::string name = old_value->name();
  const ir::TensorType type = old_value->type();
  graph->ReplaceAllUsesWith(old_value, new_value);
  // Remove consumers first: repeat until every dead node is gone.
  std::vector<ir::Node*> pending(dead_nodes.begin(), dead_nodes.end());
  while (!pending.empty()) {
    std::vector<ir::Node*> still;
    for (ir::Node* n : pending) {
      if (!graph->RemoveNode(n).ok()) still.push_back(n);
    }
    if (still.size() == pending.size()) {
      return absl::InternalError("rewrite left a removed node's output in use");
    }
    pending = std::move(still);
  }
  QFUSE_RETURN_IF_ERROR(graph->RenameValue(new_value, name));
  new_value->mutable_type() = type;
  return absl::OkStatus();
}

const ir::Tensor* ConstantInput(const ir::Node& node, int index) {
  const ir::Value* v = node.input(index);
  return v != nullptr && v->is_constant() ? v->initializer() : nullptr;
}

std::optional<std::vector<float>> FloatConstant(const ir::Node& node, int index, int64_t count) {
  const ir::Tensor* t = ConstantInput(node, index);
  if (t == nullptr || t->dtype() != ir::DataType::kFloat32 || t->num_elements() != count) return std::nullopt;
  auto v = t->values<float>();
  return std::vector<float>(v.begin(), v.end());
}

ir::Node* SoleConsumer(const ir::Value& value) {
  if (value.uses().size() != 1 || value.is_graph_output()) return nullptr;
  return value.uses()[0].node;
}

}  // namespace qfuse::fusion
