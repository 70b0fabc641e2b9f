#include "runtime/int8/float_chain.h"

namespace qfuse::runtime::int8 {

bool IsOnnxOp(const ir::Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

bool IsFloatValue(const ir::Value* v) { return v != nullptr && v->type().dtype == ir::DataType::kFloat32; }

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

}  // namespace qfuse::runtime::int8
