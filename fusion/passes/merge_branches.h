// RepVGG-style branch merging: Add(b1, b2) where each branch reads the same x and is
// a Conv (constant weights and bias, dilation 1), x itself, or a per-channel
// Mul(x, s)+t (a BatchNorm on x after BatchNormToScaleShiftPass) becomes one Conv.
// Kernels are zero-padded into a common kernel so every branch reads the same input
// window (the pads must align outputs, e.g. 3x3 pad 1 with 1x1 pad 0), the identity
// is a kernel with s (or 1) at the centre of its own channel (Cin == Cout, stride 1,
// any group count), and the biases add. Three branches summed by two Adds merge in two
// rewrites. Every branch's intermediate must have no other consumer.
#ifndef QFUSE_FUSION_PASSES_MERGE_BRANCHES_H_
#define QFUSE_FUSION_PASSES_MERGE_BRANCHES_H_

#include "fusion/pass.h"

namespace qfuse::fusion {

struct Branch {
  ir::NodeId conv = ir::kNoNode;   // a Conv branch, or
  ir::NodeId scale = ir::kNoNode;  // Mul(x, s) of a scaled identity (with `shift`), or
  ir::NodeId shift = ir::kNoNode;  // Add(., t); all three kNoNode: the identity x itself
};

struct BranchMatch {
  ir::NodeId add;
  Branch branches[2];  // branches[0] is always a Conv, which survives
};

class MergeBranchesPass : public PatternPass<BranchMatch> {
 public:
  std::string name() const override { return "merge_branches"; }

 protected:
  std::vector<std::string> AnchorOps() const override { return {"Add"}; }
  std::optional<BranchMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const BranchMatch& match) const override;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_MERGE_BRANCHES_H_
