// A graph rewrite pass. Pattern passes split a const matcher, which returns the node
// group it found, from the rewrite that mutates the graph (ONNX Runtime's
// selector/action design).
#ifndef QFUSE_FUSION_PASS_H_
#define QFUSE_FUSION_PASS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/status_macros.h"

namespace qfuse::fusion {

class Pass {
 public:
  virtual ~Pass() = default;
  // Stable identifier, used by --disable_passes and in statistics.
  virtual std::string name() const = 0;
  // Applies the pass until it finds nothing more to do; returns the number of rewrites.
  virtual absl::StatusOr<int64_t> Run(ir::Graph* graph) const = 0;
};

// A pass defined by a const Match anchored at one node and a separate Rewrite.
template <typename MatchT>
class PatternPass : public Pass {
 public:
  absl::StatusOr<int64_t> Run(ir::Graph* graph) const final {
    int64_t rewrites = 0;
    const int64_t limit = 4 * graph->num_nodes() + 16;  // every rewrite must shrink or settle
    for (;;) {
      QFUSE_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, graph->TopologicalOrder());
      std::optional<MatchT> match;
      for (const ir::Node* node : order) {
        match = Match(*graph, *node);
        if (match.has_value()) break;
      }
      if (!match.has_value()) return rewrites;
      QFUSE_RETURN_IF_ERROR(Rewrite(graph, *match));
      if (++rewrites > limit) {
        return absl::InternalError(absl::StrCat("pass ", name(), " does not converge"));
      }
    }
  }

 protected:
  // The node group anchored at `anchor`, if the pattern applies. Must not mutate.
  virtual std::optional<MatchT> Match(const ir::Graph& graph, const ir::Node& anchor) const = 0;
  virtual absl::Status Rewrite(ir::Graph* graph, const MatchT& match) const = 0;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASS_H_
