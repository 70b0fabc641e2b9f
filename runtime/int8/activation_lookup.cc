#include "runtime/int8/activation_lookup.h"

#include <algorithm>

#include "ir/unit_activation_match.h"
#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {

std::optional<ActivationLookupMatch> ActivationLookupPattern::Match(const ir::Graph& graph,
                                                                    const ir::Node& anchor) const {
  if (!anchor.domain().empty() || anchor.input(0) == nullptr || anchor.output(0) == nullptr) return std::nullopt;
  std::optional<DqOperand> x = MatchDqActivation(anchor.input(0));
  if (!x.has_value()) return std::nullopt;
  std::optional<ir::UnitActivationMatch> act = ir::MatchUnitActivation(*anchor.input(0));
  if (!act.has_value() || ir::IsClampActivation(act->spec.activation) ||
      std::none_of(act->nodes.begin(), act->nodes.end(), [&](const ir::Node* n) { return n == &anchor; })) {
    return std::nullopt;
  }
  // HardSigmoid + Mul matches HardSwish with alpha within 1e-6 of 1/6; the table computes
  // HardSwish's own arithmetic, so only the exact parameters qualify.
  for (const ir::Node* n : act->nodes) {
    if (n->op_type() != "HardSigmoid" || act->spec.activation != ir::UnitActivation::kHardSwish) continue;
    std::optional<ir::UnitSpec> gate = ir::UnitActivationOf(*n);
    if (!gate.has_value() || gate->alpha != ir::kHardSwishAlpha || gate->beta != 0.5f) return std::nullopt;
  }
  std::optional<Sink> sink = MatchQuantizeSink(*act->output);
  if (!sink.has_value()) return std::nullopt;
  ActivationLookupMatch m{{}, anchor.id(), *x, *sink, act->spec};
  for (const ir::Node* n : act->nodes) m.nodes.push_back(n->id());
  return m;
}

absl::Status ActivationLookupPattern::Rewrite(ir::Graph* graph, const ActivationLookupMatch& m) const {
  ir::AttributeMap attrs;
  ir::WriteUnitSpec(m.activation, &attrs);
  attrs.Erase(ir::kUnitBaseOpAttr);  // an activation alone
  return replacer_.Replace(graph, Group{m.nodes, m.sink, m.anchor}, kQLinearActivationOp, {QuantizedInput(graph, m.x)},
                           std::move(attrs));
}

}  // namespace qfuse::runtime::int8
