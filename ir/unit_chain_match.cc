#include "ir/unit_chain_match.h"

#include "ir/unit_activation_match.h"

namespace qfuse::ir {
namespace {

bool IsAdd(const Node* n) { return n != nullptr && n->domain().empty() && n->op_type() == "Add"; }

// The node reading `value`, when it has exactly one reader and is not a graph output.
const Node* SoleReader(const Value& value) {
  if (value.uses().size() != 1 || value.is_graph_output()) return nullptr;
  return value.uses()[0].node;
}

}  // namespace

std::vector<NodeId> UnitChain::Nodes() const {
  std::vector<NodeId> nodes = {base};
  if (bias_add != kNoNode) nodes.push_back(bias_add);
  if (residual_add != kNoNode) nodes.push_back(residual_add);
  nodes.insert(nodes.end(), activation.rbegin(), activation.rend());
  return nodes;
}

namespace {

// The chain from `base` (a base op, or the last node of an integer head) on; MatMul's bias
// Add only when `bias_allowed`.
std::optional<UnitChain> MatchFrom(const Node& base, UnitBaseOp op, bool bias_allowed, const UnitChainOptions& options) {
  if (base.output(0) == nullptr) return std::nullopt;
  UnitChain m;
  m.base = base.id();
  const Value* current = base.output(0);
  const Node* next = SoleReader(*current);
  if (bias_allowed && options.matmul_bias && BiasFollowsBase(op) && IsAdd(next)) {
    const int bias_index = next->input(0) == current ? 1 : 0;
    const Value* bias = next->input(bias_index);
    if (bias != nullptr && options.matmul_bias(base, *bias)) {
      m.bias_add = next->id();
      m.bias_index = bias_index;
      current = next->output(0);
      next = SoleReader(*current);
    }
  }
  if (options.residual && IsAdd(next) && next->inputs().size() == 2 && next->input(0) != next->input(1)) {
    const int residual_index = next->input(0) == current ? 1 : 0;
    const Value* residual = next->input(residual_index);
    if (residual != nullptr && options.residual(*residual, *current, *next->output(0))) {
      m.residual_add = next->id();
      m.residual_index = residual_index;
      current = next->output(0);
    }
  }
  if (std::optional<UnitActivationMatch> act = MatchUnitActivation(*current);
      act.has_value() && (!options.activation || options.activation(act->spec))) {
    for (const Node* n : act->nodes) m.activation.push_back(n->id());
    m.spec = act->spec;
  }
  m.spec.base_op = op;
  return m;
}

}  // namespace

std::optional<UnitChain> MatchUnitChain(const Node& base, const UnitChainOptions& options) {
  const std::optional<UnitBaseOp> op = UnitBaseOpOf(base);
  if (!op.has_value()) return std::nullopt;
  return MatchFrom(base, *op, /*bias_allowed=*/true, options);
}

std::optional<UnitChain> MatchUnitChainAfter(const Node& head, UnitBaseOp op, const UnitChainOptions& options) {
  return MatchFrom(head, op, /*bias_allowed=*/false, options);
}

const Value* UnitChainOutput(const Graph& graph, const UnitChain& chain) {
  const Node* last = graph.FindNode(chain.Nodes().back());
  return last == nullptr ? nullptr : last->output(0);
}

}  // namespace qfuse::ir
