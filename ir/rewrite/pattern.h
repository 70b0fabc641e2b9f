// The rewrite framework under fusion's passes (fusion/pass.h) and the QDQ lowering
// (runtime/int8/qdq_lowering.h), after onnxruntime's selector/action design: a pattern's
// const Match, anchored at one node, returns the node group it found, naming nodes by id;
// its Rewrite (the action) resolves the ids in the mutable graph and changes it. A
// RuleTable maps anchor op types to patterns; RewriteToFixedPoint and RewriteOnce run one.
#ifndef QFUSE_IR_REWRITE_PATTERN_H_
#define QFUSE_IR_REWRITE_PATTERN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "ir/graph.h"

namespace qfuse::ir::rewrite {

// A match-and-rewrite rule as a table holds it; Pattern<MatchT> is the way to write one.
class Rule {
 public:
  virtual ~Rule() = default;
  // Matches at node `anchor` and, when the pattern applies there, rewrites; returns whether
  // it rewrote (false also for an id no longer in the graph).
  virtual absl::StatusOr<bool> Apply(Graph* graph, NodeId anchor) const = 0;
};

template <typename MatchT>
class Pattern : public Rule {
 public:
  absl::StatusOr<bool> Apply(Graph* graph, NodeId anchor) const final {
    const Graph& view = *graph;
    const Node* node = view.FindNode(anchor);
    if (node == nullptr) return false;
    std::optional<MatchT> match = Match(view, *node);
    if (!match.has_value()) return false;
    QFUSE_RETURN_IF_ERROR(Rewrite(graph, *match));
    return true;
  }

 protected:
  // The group anchored at `anchor` when the pattern applies: node ids and whatever the
  // rewrite needs. Reads the graph only.
  virtual std::optional<MatchT> Match(const Graph& graph, const Node& anchor) const = 0;
  // The action on a group Match returned for this graph.
  virtual absl::Status Rewrite(Graph* graph, const MatchT& match) const = 0;
};

// Anchor op types -> rules (not owned): a rule is tried only at default-domain nodes of
// its op types; the rules of one op type in the order they were added.
class RuleTable {
 public:
  void Add(const std::vector<std::string>& anchor_ops, const Rule* rule);
  // The rules `node` may anchor (none for other domains).
  absl::Span<const Rule* const> RulesFor(const Node& node) const;

 private:
  absl::flat_hash_map<std::string, std::vector<const Rule*>> by_op_;
};

// Rewrites until no rule matches anywhere: each round takes the topological order and
// applies the first rule that matches at the earliest node. Fails when the rewrites do not
// settle within 4 * (nodes at the start) + 16 rounds. Returns the number of rewrites.
absl::StatusOr<int64_t> RewriteToFixedPoint(const RuleTable& table, Graph* graph);

// One sweep: visits the topological order taken at the start, skipping nodes an earlier
// rewrite removed (nodes rewrites add are not visited); at each node the first of its rules
// that matches rewrites. Returns the number of rewrites of each rule.
absl::StatusOr<absl::flat_hash_map<const Rule*, int64_t>> RewriteOnce(const RuleTable& table, Graph* graph);

}  // namespace qfuse::ir::rewrite

#endif  // QFUSE_IR_REWRITE_PATTERN_H_
