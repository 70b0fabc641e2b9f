// Removes Identity, inference-mode Dropout, all-zero Pad and same-type Cast nodes, and nodes
// no output depends on.
#ifndef QFUSE_FUSION_PASSES_REMOVE_IDENTITY_H_
#define QFUSE_FUSION_PASSES_REMOVE_IDENTITY_H_

#include "fusion/pass.h"

namespace qfuse::fusion {

struct IdentityMatch {
  ir::NodeId node;
};

class RemoveIdentityPass : public PatternPass<IdentityMatch> {
 public:
  std::string name() const override { return "remove_identity"; }

 protected:
  std::vector<std::string> AnchorOps() const override { return {"Identity", "Dropout", "Pad", "Cast"}; }
  std::optional<IdentityMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const IdentityMatch& match) const override;
};

class RemoveDeadNodesPass : public Pass {
 public:
  std::string name() const override { return "remove_dead_nodes"; }
  absl::StatusOr<int64_t> Run(ir::Graph* graph) const override { return graph->RemoveDeadCode(); }
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_REMOVE_IDENTITY_H_
