// Lowers Einsum with one to three operands, no "..." and no label repeated within an
// operand, to Transpose/Reshape/Squeeze/Unsqueeze/ReduceSum/Mul/MatMul (via
// ContractionEmitter), so the graph runs on runtimes without Einsum. Operands are
// contracted left to right; every operand's rank must be known (dims may be symbolic,
// as far as Reshape can express them).
#ifndef QFUSE_FUSION_PASSES_LOWER_EINSUM_H_
#define QFUSE_FUSION_PASSES_LOWER_EINSUM_H_

#include <string>
#include <vector>

#include "fusion/pass.h"

namespace qfuse::fusion {

struct EinsumMatch {
  ir::NodeId einsum;
};

class LowerEinsumPass : public PatternPass<EinsumMatch> {
 public:
  std::string name() const override { return "lower_einsum"; }

 protected:
  std::vector<std::string> AnchorOps() const override { return {"Einsum"}; }
  std::optional<EinsumMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const EinsumMatch& match) const override;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_LOWER_EINSUM_H_
