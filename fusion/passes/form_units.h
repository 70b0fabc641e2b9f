// Groups Conv | ConvTranspose | Gemm | MatMul(+constant bias Add) -> [Add residual] ->
// [Relu | Clip(constant lo, hi)] into one quantized-unit node (ir/fused_unit.h). Every
// part after the base op is optional; each intermediate must have no other consumer.
#ifndef QFUSE_FUSION_PASSES_FORM_UNITS_H_
#define QFUSE_FUSION_PASSES_FORM_UNITS_H_

#include "fusion/pass.h"

namespace qfuse::fusion {

struct UnitMatch {
  ir::Node* base;          // Conv, ConvTranspose, Gemm or MatMul
  ir::Node* bias_add;      // MatMul's bias Add, or nullptr
  int bias_index;          // which input of bias_add is the bias
  ir::Node* residual_add;  // or nullptr
  int residual_index;      // which input of residual_add is the residual
  ir::Node* activation;    // Relu or Clip, or nullptr
  float clip_min, clip_max;
};

class FormUnitsPass : public PatternPass<UnitMatch> {
 public:
  std::string name() const override { return "form_quantized_units"; }

 protected:
  std::optional<UnitMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const UnitMatch& match) const override;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_FORM_UNITS_H_
