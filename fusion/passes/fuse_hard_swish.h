// Rewrites HardSwish written out in elementary ops, x * Clip(x + 3, 0, 6) / 6 (paddle2onnx,
// tf2onnx and Keras exports: PaddleOCR's detector, recogniser and direction classifier hold 24,
// 28 and 18 of them), as one HardSwish(x), so that unit formation takes it into the unit before it like the
// HardSwish op and torch's HardSigmoid * x form. Matched: Add(x, 3) in either operand order,
// Clip with constant bounds 0 and 6, Mul(x, clip) in either order, then Div by 6 or Mul by
// 1/6 (float32), each constant a FLOAT scalar of that exact value and every intermediate read
// only by the next op. The result equals the four ops' up to float rounding (the HardSwish
// kernel computes x * max(0, min(1, x * fl(1/6) + 1/2))), which fusion's equivalence check
// measures like every other rewrite.
#ifndef QFUSE_FUSION_PASSES_FUSE_HARD_SWISH_H_
#define QFUSE_FUSION_PASSES_FUSE_HARD_SWISH_H_

#include <optional>
#include <string>
#include <vector>

#include "fusion/pass.h"

namespace qfuse::fusion {

struct HardSwishMatch {
  ir::NodeId add, clip, mul, scale;  // scale: the final Div or Mul
};

class FuseHardSwishPass : public PatternPass<HardSwishMatch> {
 public:
  std::string name() const override { return "fuse_hard_swish"; }

 protected:
  std::vector<std::string> AnchorOps() const override { return {"Div", "Mul"}; }
  std::optional<HardSwishMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const HardSwishMatch& match) const override;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_FUSE_HARD_SWISH_H_
