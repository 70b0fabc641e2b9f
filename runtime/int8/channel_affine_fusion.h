// A float graph's per-channel affine: Mul(x, scale) -> Add(., shift) [-> Relu], with scale and
// shift FLOAT constants of shape [C, 1, ...] (rank(x) - 1 dims) or [1, C, 1, ...] (rank(x)
// dims) for x's C channels on axis 1, x of rank 3 or more, either operand order of the Mul and
// the Add: the batch norm that cannot fold into a convolution (fusion's
// BatchNormToScaleShiftPass writes it; a DenseNet has one before each ReLU) => one
// qfuse.ChannelAffine(x, scale, shift) (int8_ops.h kChannelAffineOp): one pass over x instead
// of three, with the same roundings, and one that runs on the channel-blocked layout of the
// convolutions around it (runtime/onednn/blocked_kernels.h). Taken where each intermediate is
// read by the chain alone and is not a graph output.
#ifndef QFUSE_RUNTIME_INT8_CHANNEL_AFFINE_FUSION_H_
#define QFUSE_RUNTIME_INT8_CHANNEL_AFFINE_FUSION_H_

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/group_replacer.h"

namespace qfuse::runtime::int8 {

struct ChannelAffineMatch {
  std::vector<ir::NodeId> chain;  // Mul, Add[, Relu]
  ir::Value* x = nullptr;
  ir::Value* scale = nullptr;
  ir::Value* shift = nullptr;
  bool relu = false;
};

class ChannelAffinePattern : public ir::rewrite::Pattern<ChannelAffineMatch> {
 public:
  explicit ChannelAffinePattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<ChannelAffineMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const ChannelAffineMatch& m) const override;

 private:
  const Replacer& replacer_;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_CHANNEL_AFFINE_FUSION_H_
