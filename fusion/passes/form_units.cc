#include "fusion/passes/form_units.h"

#include <vector>

#include "fusion/rewrite_util.h"
#include "ir/unit_activation_match.h"

namespace qfuse::fusion {
namespace {

bool IsStandard(const ir::Node& n, const char* op) { return n.domain().empty() && n.op_type() == op; }

}  // namespace

std::optional<UnitMatch> FormUnitsPass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  const std::optional<ir::UnitBaseOp> base_op = ir::UnitBaseOpOf(anchor);
  if (!base_op.has_value()) return std::nullopt;
  const bool is_matmul = *base_op == ir::UnitBaseOp::kMatMul;
  const ir::Tensor* w = ConstantInput(anchor, 1);
  if (w == nullptr || w->dtype() != ir::DataType::kFloat32) return std::nullopt;
  if (anchor.input(0)->type().dtype != ir::DataType::kFloat32) return std::nullopt;
  if (!is_matmul && anchor.input(2) != nullptr && ConstantInput(anchor, 2) == nullptr) return std::nullopt;
  if (is_matmul && w->rank() != 2) return std::nullopt;

  UnitMatch m{const_cast<ir::Node*>(&anchor), nullptr, 0, nullptr, 0, {}, {}};
  ir::Value* current = anchor.output(0);
  ir::Node* next = SoleConsumer(*current);
  if (forms_.matmul_bias && ir::BiasFollowsBase(*base_op) && next != nullptr && IsStandard(*next, "Add")) {
    const int bias_index = next->input(0) == current ? 1 : 0;
    const ir::Tensor* b = ConstantInput(*next, bias_index);
    if (b != nullptr && b->dtype() == ir::DataType::kFloat32 && b->num_elements() == w->dims()[1] &&
        (b->rank() == 0 || b->dims().back() == b->num_elements())) {
      m.bias_add = next;
      m.bias_index = bias_index;
      current = next->output(0);
      next = SoleConsumer(*current);
    }
  }
  if (forms_.residual_add && next != nullptr && IsStandard(*next, "Add") && next->inputs().size() == 2 &&
      next->input(0) != next->input(1)) {
    const int residual_index = next->input(0) == current ? 1 : 0;
    const ir::Value* residual = next->input(residual_index);
    // The residual is added without broadcasting, so it must have the output's shape.
    if (residual->type().dtype == ir::DataType::kFloat32 && ir::ResidualShapeFits(*residual, *current) &&
        ir::ResidualShapeFits(*next->output(0), *current)) {
      m.residual_add = next;
      m.residual_index = residual_index;
      current = next->output(0);
    }
  }
  if (auto act = ir::MatchUnitActivation(*current);
      act.has_value() && (forms_.non_clamp_activations || ir::IsClampActivation(act->spec.activation))) {
    m.activation = act->nodes;
    m.spec = act->spec;
  }
  m.spec.base_op = *base_op;
  return m;
}

absl::Status FormUnitsPass::Rewrite(ir::Graph* graph, const UnitMatch& m) const {
  ir::AttributeMap attrs = m.base->attrs();
  ir::WriteUnitSpec(m.spec, &attrs);
  ir::Value* bias = m.bias_add != nullptr ? m.bias_add->input(m.bias_index) : m.base->input(2);
  ir::Value* residual = m.residual_add != nullptr ? m.residual_add->input(m.residual_index) : nullptr;
  std::vector<ir::Node*> chain = {m.base};
  ir::Value* last = m.base->output(0);
  std::vector<ir::Node*> parts = {m.bias_add, m.residual_add};
  parts.insert(parts.end(), m.activation.rbegin(), m.activation.rend());
  for (ir::Node* n : parts) {
    if (n != nullptr) {
      chain.push_back(n);
      last = n->output(0);
    }
  }
  QFUSE_ASSIGN_OR_RETURN(
      ir::Node * unit,
      graph->AddNode(ir::kUnitOpType, m.base->name(),
                     {m.base->input(0), m.base->input(1), bias, residual},
                     {graph->UniqueValueName(last->name() + "_unit")}, attrs, ir::kQfuseDomain));
  graph->RemoveTrailingNullInputs(unit);
  // Remove the chain back to front so each node's output is unused when it goes.
  std::vector<ir::Node*> dead(chain.rbegin(), chain.rend());
  const std::string name = m.base->name();
  QFUSE_RETURN_IF_ERROR(ReplaceAndRemove(graph, last, unit->output(0), dead));
  return graph->RenameNode(unit, name);  // the unit takes its base op's name
}

}  // namespace qfuse::fusion
