#include "fusion/passes/form_units.h"

#include <vector>

#include "fusion/rewrite_util.h"
#include "ir/unit_activation_match.h"

namespace qfuse::fusion {
namespace {

// MatMul's bias: a FLOAT constant with one value per output column ([N] or [..., N] of ones).
bool IsFloatMatMulBias(const ir::Node& matmul, const ir::Value& bias) {
  const ir::Tensor* w = ConstantInput(matmul, 1);
  const ir::Tensor* b = bias.is_constant() ? bias.initializer() : nullptr;
  return w != nullptr && b != nullptr && b->dtype() == ir::DataType::kFloat32 && b->num_elements() == w->dims()[1] &&
         (b->rank() == 0 || b->dims().back() == b->num_elements());
}

// The residual is added without broadcasting, so it must have the accumulator's shape.
bool IsFloatResidual(const ir::Value& residual, const ir::Value& acc, const ir::Value& sum) {
  return residual.type().dtype == ir::DataType::kFloat32 && ir::ResidualShapeFits(residual, acc) &&
         ir::ResidualShapeFits(sum, acc);
}

}  // namespace

FormUnitsPass::FormUnitsPass(UnitForms forms) {
  if (forms.matmul_bias) chain_options_.matmul_bias = IsFloatMatMulBias;
  if (forms.residual_add) chain_options_.residual = IsFloatResidual;
  if (!forms.non_clamp_activations) {
    chain_options_.activation = [](const ir::UnitSpec& a) { return ir::IsClampActivation(a.activation); };
  }
}

std::vector<std::string> FormUnitsPass::AnchorOps() const {
  std::vector<std::string> ops;
  for (ir::UnitBaseOp op : ir::kUnitBaseOps) ops.push_back(ir::UnitBaseOpName(op));
  return ops;
}

std::optional<ir::UnitChain> FormUnitsPass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  const std::optional<ir::UnitBaseOp> base_op = ir::UnitBaseOpOf(anchor);
  if (!base_op.has_value()) return std::nullopt;
  const ir::Tensor* w = ConstantInput(anchor, 1);
  if (w == nullptr || w->dtype() != ir::DataType::kFloat32) return std::nullopt;
  if (anchor.input(0)->type().dtype != ir::DataType::kFloat32) return std::nullopt;
  const bool bias_after = ir::BiasFollowsBase(*base_op);
  if (!bias_after && anchor.input(2) != nullptr && ConstantInput(anchor, 2) == nullptr) return std::nullopt;
  if (bias_after && w->rank() != 2) return std::nullopt;
  return ir::MatchUnitChain(anchor, chain_options_);
}

absl::Status FormUnitsPass::Rewrite(ir::Graph* graph, const ir::UnitChain& m) const {
  std::vector<ir::Node*> chain;
  for (ir::NodeId id : m.Nodes()) chain.push_back(graph->FindNode(id));
  ir::Node* base = chain.front();
  ir::Node* bias_add = graph->FindNode(m.bias_add);
  ir::Node* residual_add = graph->FindNode(m.residual_add);
  ir::AttributeMap attrs = base->attrs();
  ir::WriteUnitSpec(m.spec, &attrs);
  ir::Value* bias = bias_add != nullptr ? bias_add->input(m.bias_index) : base->input(2);
  ir::Value* residual = residual_add != nullptr ? residual_add->input(m.residual_index) : nullptr;
  ir::Value* last = chain.back()->output(0);
  QFUSE_ASSIGN_OR_RETURN(
      ir::Node * unit,
      graph->AddNode(ir::kUnitOpType, base->name(), {base->input(0), base->input(1), bias, residual},
                     {graph->UniqueValueName(last->name() + "_unit")}, attrs, ir::kQfuseDomain));
  graph->RemoveTrailingNullInputs(unit);
  // Remove the chain back to front so each node's output is unused when it goes.
  std::vector<ir::Node*> dead(chain.rbegin(), chain.rend());
  const std::string name = base->name();
  QFUSE_RETURN_IF_ERROR(ReplaceAndRemove(graph, last, unit->output(0), dead));
  return graph->RenameNode(unit, name);  // the unit takes its base op's name
}

}  // namespace qfuse::fusion
