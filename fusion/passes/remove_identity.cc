#include "fusion/passes/remove_identity.h"

#include "fusion/rewrite_util.h"

namespace qfuse::fusion {

std::optional<IdentityMatch> RemoveIdentityPass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  const std::string& op = anchor.op_type();
  if (!anchor.domain().empty() || (op != "Identity" && op != "Dropout" && op != "Pad" && op != "Cast")) {
    return std::nullopt;
  }
  const ir::Value* in = anchor.input(0);
  const ir::Value* out = anchor.output(0);
  if (in == nullptr || out == nullptr) return std::nullopt;
  if (op == "Cast" && !ir::IsCastToOwnType(anchor)) return std::nullopt;
  if (op == "Pad") {
    // Constant pads, all zero (PyTorch exports one before every AveragePool of a model with
    // dynamic spatial axes): the output is the input, in every mode.
    // The pads must also be well formed (two per padded axis), as onnxruntime requires: a
    // malformed Pad stays, for the kernel to refuse.
    const ir::Tensor* pads = ConstantInput(anchor, 1);
    if (pads == nullptr || pads->dtype() != ir::DataType::kInt64) return std::nullopt;
    int64_t padded_axes = 0;
    if (anchor.inputs().size() > 3 && anchor.input(3) != nullptr) {
      const ir::Tensor* axes = ConstantInput(anchor, 3);
      if (axes == nullptr) return std::nullopt;
      padded_axes = axes->num_elements();
    } else {
      const ir::Shape& shape = in->type().shape;
      if (!shape.rank_known) return std::nullopt;
      padded_axes = shape.rank();
    }
    if (pads->num_elements() != 2 * padded_axes) return std::nullopt;
    for (int64_t p : pads->values<int64_t>()) {
      if (p != 0) return std::nullopt;
    }
  }
  if (op == "Dropout") {
    // Only inference mode (no training_mode input, or a constant false) with an unused mask.
    const ir::Tensor* training = ConstantInput(anchor, 2);
    if (anchor.input(2) != nullptr && (training == nullptr || training->data<uint8_t>()[0] != 0)) return std::nullopt;
    const ir::Value* mask = anchor.output(1);
    if (mask != nullptr && (!mask->uses().empty() || mask->is_graph_output())) return std::nullopt;
  }
  // A graph output keeps its name, so its producer must be renamable.
  if (out->is_graph_output() && (in->is_graph_input() || in->is_constant() || in->is_graph_output())) {
    return std::nullopt;
  }
  return IdentityMatch{anchor.id()};
}

absl::Status RemoveIdentityPass::Rewrite(ir::Graph* graph, const IdentityMatch& match) const {
  ir::Node* node = graph->FindNode(match.node);
  ir::Value* in = node->input(0);
  ir::Value* out = node->output(0);
  if (!out->is_graph_output()) {
    graph->ReplaceAllUsesWith(out, in);
    return graph->RemoveNode(node);
  }
  // A graph output keeps its name: the input value takes it over.
  return ReplaceAndRemove(graph, out, in, {node});
}

}  // namespace qfuse::fusion
