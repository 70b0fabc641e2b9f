// Groups Conv | ConvTranspose | Gemm | MatMul(+constant bias Add) -> [Add residual] ->
// [activation] into one quantized-unit node (ir/fused_unit.h), as ir::MatchUnitChain finds
// them on the float graph: FLOAT constant weights (and bias), a FLOAT residual of the
// output's shape, any activation form ir::MatchUnitActivation accepts (Relu, Clip(constant
// lo, hi), HardSwish, x * HardSigmoid(x) as HardSwish, x * Sigmoid(x) as SiLU, HardSigmoid,
// Sigmoid, LeakyRelu). Every part after the base op is optional; each intermediate must have
// no other consumer. UnitForms narrows what a unit absorbs, for runtimes that fuse less
// (quant/deploy_target.h).
#ifndef QFUSE_FUSION_PASSES_FORM_UNITS_H_
#define QFUSE_FUSION_PASSES_FORM_UNITS_H_

#include "fusion/pass.h"
#include "ir/unit_chain_match.h"

namespace qfuse::fusion {

// What a unit may absorb besides its base op. The default absorbs everything above.
struct UnitForms {
  bool residual_add = true;           // a residual Add
  bool matmul_bias = true;            // MatMul's constant bias Add
  bool non_clamp_activations = true;  // false: only Relu and Clip (HardSwish, SiLU, ... stay separate)
};

class FormUnitsPass : public PatternPass<ir::UnitChain> {
 public:
  explicit FormUnitsPass(UnitForms forms = {});
  std::string name() const override { return "form_quantized_units"; }

 protected:
  std::vector<std::string> AnchorOps() const override;
  std::optional<ir::UnitChain> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const ir::UnitChain& match) const override;

 private:
  ir::UnitChainOptions chain_options_;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_FORM_UNITS_H_
