// A graph rewrite pass. Pattern passes are ir::rewrite patterns (ir/rewrite/pattern.h): a
// const Match anchored at a node of the pass's anchor op types, returning the node group by
// id, and a separate Rewrite that mutates (ONNX Runtime's selector/action design), run until
// the pattern matches nowhere.
#ifndef QFUSE_FUSION_PASS_H_
#define QFUSE_FUSION_PASS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/rewrite/pattern.h"

namespace qfuse::fusion {

class Pass {
 public:
  virtual ~Pass() = default;
  // Stable identifier, used by --disable_passes and in statistics.
  virtual std::string name() const = 0;
  // Applies the pass until it finds nothing more to do; returns the number of rewrites.
  virtual absl::StatusOr<int64_t> Run(ir::Graph* graph) const = 0;
};

template <typename MatchT>
class PatternPass : public Pass, public ir::rewrite::Pattern<MatchT> {
 public:
  absl::StatusOr<int64_t> Run(ir::Graph* graph) const final {
    ir::rewrite::RuleTable table;
    table.Add(AnchorOps(), this);
    return ir::rewrite::RewriteToFixedPoint(table, graph);
  }

 protected:
  // The default-domain op types a match may be anchored at.
  virtual std::vector<std::string> AnchorOps() const = 0;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASS_H_
