#include "runtime/int8/float_chain.h"

#include <utility>

#include "base/status_macros.h"

namespace qfuse::runtime::int8 {

bool IsOnnxOp(const ir::Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

bool IsFloatValue(const ir::Value* v) { return v != nullptr && v->type().dtype == ir::DataType::kFloat32; }

bool CopiedPerReader(const ir::Value* v) { return v != nullptr && IsOnnxOp(v->producer(), "DequantizeLinear"); }

const ir::Node* SoleReader(const ir::Value* v, const char* op, int index) {
  const ir::Node* reader = SoleBinaryReader(v, op);
  return reader != nullptr && v->uses()[0].input_index == index ? reader : nullptr;
}

const ir::Node* SoleBinaryReader(const ir::Value* v, const char* op) {
  if (!IsFloatValue(v) || v->is_graph_output() || v->uses().size() != 1) return nullptr;
  const ir::Node* reader = v->uses()[0].node;
  return IsOnnxOp(reader, op) ? reader : nullptr;
}

std::optional<float> ConstantScalar(const ir::Value* v) {
  if (v == nullptr || !v->is_constant() || v->initializer()->dtype() != ir::DataType::kFloat32 ||
      v->initializer()->num_elements() != 1) {
    return std::nullopt;
  }
  return v->initializer()->data<float>()[0];
}

ir::Value* OtherInput(const ir::Node& n, const ir::Value* v) {
  if (n.inputs().size() != 2) return nullptr;
  if (n.input(0) == v && n.input(1) != v) return n.input(1);
  if (n.input(1) == v && n.input(0) != v) return n.input(0);
  return nullptr;
}

absl::Status ReplaceFloatChain(ir::Graph* graph, const Replacer& replacer, const std::vector<ir::NodeId>& chain,
                               const std::string& op_type, const std::vector<ir::Value*>& inputs,
                               ir::AttributeMap attrs, const std::string& domain) {
  ir::Value* y = graph->FindNode(chain.back())->output(0);
  const std::string name = y->name();
  const std::string node_name = graph->FindNode(chain.front())->name();  // a copy: that node goes
  QFUSE_ASSIGN_OR_RETURN(ir::Node * n, graph->AddNode(op_type, node_name, inputs,
                                                      {graph->UniqueValueName(name + "_fused")}, std::move(attrs),
                                                      domain));
  n->output(0)->mutable_type() = y->type();
  graph->ReplaceAllUsesWith(y, n->output(0));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    QFUSE_RETURN_IF_ERROR(replacer.Remove(graph, graph->FindNode(*it)));
  }
  QFUSE_RETURN_IF_ERROR(graph->RenameNode(n, node_name));
  return graph->RenameValue(n->output(0), name);
}

}  // namespace qfuse::runtime::int8
