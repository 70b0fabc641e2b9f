#include "ir/int8_forms.h"

#include "absl/types/span.h"
#include "ir/fused_unit.h"

namespace qfuse::ir {
namespace {

bool Is(const Node& n, const char* op) { return n.domain().empty() && n.op_type() == op; }

}  // namespace

bool KeepsInputQuantization(const Node& n) {
  if (!IsAnyOf(n, kKeepsInputQuantizationOps)) return false;
  if (!Is(n, "Resize")) return true;
  absl::StatusOr<std::string> mode = n.attrs().GetString("mode", "nearest");
  return mode.ok() && *mode == "nearest";
}

bool IsAveragePool(const Node& n) { return IsAnyOf(n, kAveragePoolOps); }

bool IsClamp(const Node& n) { return IsAnyOf(n, kClampOps); }

bool IsConcat(const Node& n) { return IsAnyOf(n, kConcatOps); }

bool HasInt8Form(const Node& n) {
  if (IsUnit(n) || KeepsInputQuantization(n) || IsAveragePool(n)) return true;
  if (Is(n, "Add")) {
    for (const Value* in : n.inputs()) {
      if (in == nullptr || in->is_constant()) return false;
    }
    return true;
  }
  return UnitBaseOpOf(n).has_value() || IsClamp(n) || IsConcat(n);
}

bool IsInt8PassThrough(const Node& n) {
  return KeepsInputQuantization(n) || IsAveragePool(n) || IsClamp(n) || IsConcat(n) || Is(n, "Add");
}

}  // namespace qfuse::ir
