#include "ir/rewrite/pattern.h"

namespace qfuse::ir::rewrite {
namespace {

// The ids of the graph's nodes in topological order.
absl::StatusOr<std::vector<NodeId>> OrderIds(const Graph& graph) {
  QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.TopologicalOrder());
  std::vector<NodeId> ids;
  ids.reserve(order.size());
  for (const Node* n : order) ids.push_back(n->id());
  return ids;
}

}  // namespace

void RuleTable::Add(const std::vector<std::string>& anchor_ops, const Rule* rule) {
  for (const std::string& op : anchor_ops) by_op_[op].push_back(rule);
}

absl::Span<const Rule* const> RuleTable::RulesFor(const Node& node) const {
  if (!node.domain().empty()) return {};
  auto it = by_op_.find(node.op_type());
  if (it == by_op_.end()) return {};
  return it->second;
}

absl::StatusOr<int64_t> RewriteToFixedPoint(const RuleTable& table, Graph* graph) {
  const int64_t limit = 4 * graph->num_nodes() + 16;  // every rewrite must shrink or settle
  for (int64_t rewrites = 0;; ++rewrites) {
    if (rewrites > limit) return absl::InternalError("rewrites do not converge");
    QFUSE_ASSIGN_OR_RETURN(std::vector<NodeId> order, OrderIds(*graph));
    bool rewrote = false;
    for (NodeId id : order) {
      for (const Rule* rule : table.RulesFor(*graph->FindNode(id))) {
        QFUSE_ASSIGN_OR_RETURN(rewrote, rule->Apply(graph, id));
        if (rewrote) break;
      }
      if (rewrote) break;
    }
    if (!rewrote) return rewrites;
  }
}

absl::StatusOr<absl::flat_hash_map<const Rule*, int64_t>> RewriteOnce(const RuleTable& table, Graph* graph) {
  absl::flat_hash_map<const Rule*, int64_t> counts;
  QFUSE_ASSIGN_OR_RETURN(std::vector<NodeId> order, OrderIds(*graph));
  for (NodeId id : order) {
    const Node* node = graph->FindNode(id);
    if (node == nullptr) continue;  // removed by an earlier rewrite
    for (const Rule* rule : table.RulesFor(*node)) {
      QFUSE_ASSIGN_OR_RETURN(const bool rewrote, rule->Apply(graph, id));
      if (rewrote) {
        ++counts[rule];
        break;
      }
    }
  }
  return counts;
}

}  // namespace qfuse::ir::rewrite
