// Groups Conv | ConvTranspose | Gemm | MatMul(+constant bias Add) -> [Add residual] ->
// [activation] into one quantized-unit node (ir/fused_unit.h). The activation is any form
// ir::MatchUnitActivation accepts: Relu, Clip(constant lo, hi), HardSwish, x * HardSigmoid(x)
// as HardSwish, x * Sigmoid(x) as SiLU, HardSigmoid, Sigmoid, LeakyRelu. Every part after
// the base op is optional; each intermediate must have no other consumer. UnitForms narrows
// what a unit absorbs, for runtimes that fuse less (quant/deploy_target.h).
#ifndef QFUSE_FUSION_PASSES_FORM_UNITS_H_
#define QFUSE_FUSION_PASSES_FORM_UNITS_H_

#include <vector>

#include "fusion/pass.h"
#include "ir/fused_unit.h"

namespace qfuse::fusion {

struct UnitMatch {
  ir::Node* base;          // Conv, ConvTranspose, Gemm or MatMul
  ir::Node* bias_add;      // MatMul's bias Add, or nullptr
  int bias_index;          // which input of bias_add is the bias
  ir::Node* residual_add;  // or nullptr
  int residual_index;      // which input of residual_add is the residual
  std::vector<ir::Node*> activation;  // the activation's ops, last first (empty: none)
  ir::UnitSpec spec;                  // base op and activation
};

// What a unit may absorb besides its base op. The default absorbs everything above.
struct UnitForms {
  bool residual_add = true;           // a residual Add
  bool matmul_bias = true;            // MatMul's constant bias Add
  bool non_clamp_activations = true;  // false: only Relu and Clip (HardSwish, SiLU, ... stay separate)
};

class FormUnitsPass : public PatternPass<UnitMatch> {
 public:
  explicit FormUnitsPass(UnitForms forms = {}) : forms_(forms) {}
  std::string name() const override { return "form_quantized_units"; }

 protected:
  std::optional<UnitMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const UnitMatch& match) const override;

 private:
  UnitForms forms_;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_FORM_UNITS_H_
