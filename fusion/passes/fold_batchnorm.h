// BatchNormalization folding. y = s * (x - mean) + beta with s = gamma / sqrt(var + eps)
// is absorbed into the weights and bias of the preceding Conv, ConvTranspose, Gemm or
// MatMul(+Add bias) when the BN is that op's sole consumer; a BN with nothing to fold
// into becomes a per-channel Mul and Add.
#ifndef QFUSE_FUSION_PASSES_FOLD_BATCHNORM_H_
#define QFUSE_FUSION_PASSES_FOLD_BATCHNORM_H_

#include "fusion/pass.h"

namespace qfuse::fusion {

struct BatchNormMatch {
  ir::NodeId producer;  // Conv, ConvTranspose, Gemm or MatMul
  ir::NodeId bias_add;  // Add after a MatMul, or kNoNode
  ir::NodeId batch_norm;
};

class FoldBatchNormPass : public PatternPass<BatchNormMatch> {
 public:
  std::string name() const override { return "fold_batchnorm"; }

 protected:
  std::vector<std::string> AnchorOps() const override { return {"BatchNormalization"}; }
  std::optional<BatchNormMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const BatchNormMatch& match) const override;
};

struct StandaloneBatchNormMatch {
  ir::NodeId batch_norm;
};

class BatchNormToScaleShiftPass : public PatternPass<StandaloneBatchNormMatch> {
 public:
  std::string name() const override { return "batchnorm_to_scale_shift"; }

 protected:
  std::vector<std::string> AnchorOps() const override { return {"BatchNormalization"}; }
  std::optional<StandaloneBatchNormMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const StandaloneBatchNormMatch& match) const override;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_FOLD_BATCHNORM_H_
