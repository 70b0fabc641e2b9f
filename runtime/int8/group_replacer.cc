#include "runtime/int8/group_replacer.h"

#include <utility>

#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {

absl::Status Replacer::Replace(ir::Graph* graph, const Group& group, const std::string& op_type,
                               const std::vector<ir::Value*>& inputs, ir::AttributeMap attrs) const {
  attrs.Set(kRequantizeModeAttr, std::string(RequantizeModeName(options_.mode)));
  return ReplaceWith(graph, group, op_type, inputs, std::move(attrs), ir::kQfuseDomain);
}

absl::Status Replacer::ReplaceWithOnnxOp(ir::Graph* graph, const Group& group, const std::string& op_type,
                                         const std::vector<ir::Value*>& inputs) const {
  return ReplaceWith(graph, group, op_type, inputs, {}, "");
}

absl::Status Replacer::ReplaceWith(ir::Graph* graph, const Group& group, const std::string& op_type,
                                   const std::vector<ir::Value*>& inputs, ir::AttributeMap attrs,
                                   const std::string& domain) const {
  ir::Node* q = graph->FindNode(group.sink.q);
  ir::Value* y = graph->FindNode(group.chain.front())->output(0);
  ir::Value* old_out = q != nullptr ? q->output(0) : y;
  const std::string name = old_out->name();
  const std::string node_name = graph->FindNode(group.name_from)->name();  // a copy: that node goes
  ir::TensorType type = y->type();
  if (q != nullptr) {
    type.dtype = group.sink.qtype;
    type.quant = group.sink.params;
  }
  QFUSE_ASSIGN_OR_RETURN(ir::Node * n, graph->AddNode(op_type, node_name, inputs,
                                                      {graph->UniqueValueName(name + "_int8")}, std::move(attrs),
                                                      domain));
  n->output(0)->mutable_type() = type;
  graph->ReplaceAllUsesWith(old_out, n->output(0));
  if (q != nullptr) QFUSE_RETURN_IF_ERROR(Remove(graph, q));
  for (ir::NodeId id : group.chain) QFUSE_RETURN_IF_ERROR(Remove(graph, graph->FindNode(id)));
  QFUSE_RETURN_IF_ERROR(graph->RenameNode(n, node_name));  // free again once the chain is gone
  return graph->RenameValue(n->output(0), name);
}

absl::Status Replacer::Remove(ir::Graph* graph, ir::Node* node) const {
  QFUSE_RETURN_IF_ERROR(graph->RemoveNode(node));
  ++stats_->removed_nodes;
  return absl::OkStatus();
}

}  // namespace qfuse::runtime::int8
