#include "ir/int8_forms.h"

#include "ir/fused_unit.h"

namespace qfuse::ir {
namespace {

bool Is(const Node& n, const char* op) { return n.domain().empty() && n.op_type() == op; }

bool IsAnyOf(const Node& n, std::initializer_list<const char*> ops) {
  for (const char* op : ops) {
    if (Is(n, op)) return true;
  }
  return false;
}

}  // namespace

bool KeepsInputQuantization(const Node& n) {
  return IsAnyOf(n, {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity"});
}

bool IsAveragePool(const Node& n) { return IsAnyOf(n, {"GlobalAveragePool", "AveragePool"}); }

bool HasInt8Form(const Node& n) {
  if (IsUnit(n) || KeepsInputQuantization(n) || IsAveragePool(n)) return true;
  if (Is(n, "Add")) {
    for (const Value* in : n.inputs()) {
      if (in == nullptr || in->is_constant()) return false;
    }
    return true;
  }
  return IsAnyOf(n, {"Conv", "ConvTranspose", "Gemm", "MatMul", "Relu", "Clip", "Concat"});
}

bool IsInt8PassThrough(const Node& n) {
  return KeepsInputQuantization(n) || IsAveragePool(n) || IsAnyOf(n, {"Relu", "Clip", "Concat", "Add"});
}

}  // namespace qfuse::ir
