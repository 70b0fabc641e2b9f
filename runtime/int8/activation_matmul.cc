#include "runtime/int8/activation_matmul.h"

#include <vector>

namespace qfuse::runtime::int8 {
namespace {

// A node's input `i` when it is present and a constant.
bool HasConstantInput(const ir::Node& n, size_t i) {
  return n.inputs().size() > i && n.input(i) != nullptr && n.input(i)->is_constant();
}

}  // namespace

std::optional<ActivationMatMulMatch> ActivationMatMulPattern::Match(const ir::Graph& graph,
                                                                    const ir::Node& anchor) const {
  if (!anchor.domain().empty() || anchor.op_type() != "MatMul" || anchor.output(0) == nullptr) return std::nullopt;
  std::optional<DqOperand> a = MatchDqActivation(anchor.input(0));
  std::optional<DqOperand> b = MatchDqActivation(anchor.input(1));
  std::optional<Sink> sink = MatchQuantizeSink(*anchor.output(0));
  if (!a.has_value() || !b.has_value() || !sink.has_value()) return std::nullopt;
  // QLinearMatMul takes all eight inputs: every zero point must be there.
  for (ir::NodeId id : {a->dq, b->dq, sink->q}) {
    const ir::Node* n = graph.FindNode(id);
    if (n == nullptr || !HasConstantInput(*n, 1) || !HasConstantInput(*n, 2)) return std::nullopt;
  }
  return ActivationMatMulMatch{anchor.id(), *a, *b, *sink};
}

absl::Status ActivationMatMulPattern::Rewrite(ir::Graph* graph, const ActivationMatMulMatch& m) const {
  const ir::Node* dq_a = graph->FindNode(m.a.dq);
  const ir::Node* dq_b = graph->FindNode(m.b.dq);
  const ir::Node* q = graph->FindNode(m.sink.q);
  const std::vector<ir::Value*> inputs = {QuantizedInput(graph, m.a), dq_a->input(1), dq_a->input(2),
                                          QuantizedInput(graph, m.b), dq_b->input(1), dq_b->input(2),
                                          q->input(1),                q->input(2)};
  return replacer_.ReplaceWithOnnxOp(graph, Group{{m.matmul}, m.sink, m.matmul}, "QLinearMatMul", inputs);
}

}  // namespace qfuse::runtime::int8
