#include "runtime/int8/activation_softmax.h"

#include <vector>

#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {

std::optional<ActivationSoftmaxMatch> ActivationSoftmaxPattern::Match(const ir::Graph& graph,
                                                                      const ir::Node& anchor) const {
  if (!anchor.domain().empty() || anchor.op_type() != "Softmax" || anchor.output(0) == nullptr) return std::nullopt;
  std::optional<DqOperand> x = MatchDqActivation(anchor.input(0));
  std::optional<Sink> sink = MatchQuantizeSink(*anchor.output(0));
  if (!x.has_value() || !sink.has_value()) return std::nullopt;
  // onnxruntime fuses only when input and output share a type; its kernel takes UINT8 here.
  const ir::Node* dq = graph.FindNode(x->dq);
  if (dq->input(0)->type().dtype != ir::DataType::kUint8 || sink->qtype != ir::DataType::kUint8) return std::nullopt;
  return ActivationSoftmaxMatch{anchor.id(), *x, *sink};
}

absl::Status ActivationSoftmaxPattern::Rewrite(ir::Graph* graph, const ActivationSoftmaxMatch& m) const {
  absl::StatusOr<int64_t> axis = graph->FindNode(m.softmax)->attrs().GetInt("axis", -1);
  if (!axis.ok()) return axis.status();
  ir::AttributeMap attrs;
  attrs.Set("axis", *axis);
  const std::vector<ir::Value*> inputs = {QuantizedInput(graph, m.x)};
  return replacer_.Replace(graph, Group{{m.softmax}, m.sink, m.softmax}, kQLinearSoftmaxOp, inputs, std::move(attrs));
}

}  // namespace qfuse::runtime::int8
