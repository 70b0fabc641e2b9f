#include "runtime/int8/activation_matmul.h"

#include <string>
#include <vector>

#include "base/status_macros.h"

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
  ir::Node* matmul = graph->FindNode(m.matmul);
  ir::Node* q = graph->FindNode(m.sink.q);
  const ir::Node* dq_a = graph->FindNode(m.a.dq);
  const ir::Node* dq_b = graph->FindNode(m.b.dq);
  std::vector<ir::Value*> inputs = {QuantizedInput(graph, m.a), dq_a->input(1), dq_a->input(2),
                                    QuantizedInput(graph, m.b), dq_b->input(1), dq_b->input(2),
                                    q->input(1),                q->input(2)};
  ir::Value* q_out = q->output(0);
  const std::string name = q_out->name();
  const std::string node_name = matmul->name();
  ir::TensorType type = matmul->output(0)->type();
  type.dtype = m.sink.qtype;
  type.quant = m.sink.params;
  QFUSE_ASSIGN_OR_RETURN(ir::Node * n, graph->AddNode("QLinearMatMul", node_name + "_int8", inputs,
                                                      {graph->UniqueValueName(name + "_int8")}));
  n->output(0)->mutable_type() = type;
  graph->ReplaceAllUsesWith(q_out, n->output(0));
  for (ir::Node* gone : {q, matmul}) {
    QFUSE_RETURN_IF_ERROR(graph->RemoveNode(gone));
    ++*removed_nodes_;
  }
  QFUSE_RETURN_IF_ERROR(graph->RenameNode(n, node_name));
  return graph->RenameValue(n->output(0), name);
}

}  // namespace qfuse::runtime::int8
