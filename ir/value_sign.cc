#include "ir/value_sign.h"

#include <string>

#include "absl/types/span.h"
#include "base/status_macros.h"
#include "ir/int8_forms.h"
#include "ir/unit_activation_match.h"

namespace qfuse::ir {
namespace {

bool IsAnyOf(const Node& n, absl::Span<const char* const> ops) {
  if (!n.domain().empty()) return false;
  for (const char* op : ops) {
    if (n.op_type() == op) return true;
  }
  return false;
}

// Ops whose every output element is >= 0 (or NaN) whatever their input.
constexpr const char* kNonNegativeOps[] = {"Softmax", "Abs", "Exp", "Softplus", "Sqrt"};
// Ops whose outputs hold only values of input 0, averages of them (with zero padding) or sums
// of them: non-negative when input 0 is.
constexpr const char* kFollowsInputOps[] = {
    "GlobalAveragePool", "AveragePool", "GlobalMaxPool", "Slice",     "Split",     "Gather",    "Tile",
    "Expand",            "DepthToSpace", "SpaceToDepth", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum",
    "Dropout"};
// Non-negative when every data operand is.
constexpr const char* kAllOperandsOps[] = {"Concat", "Add", "Mul", "Min"};

bool ConstantIsNonNegative(const Value& v) {
  const Tensor* t = v.initializer();
  if (t == nullptr || t->dtype() != DataType::kFloat32) return false;
  for (float x : t->values<float>()) {
    if (!(x >= 0.f)) return false;
  }
  return true;
}

class SignPass {
 public:
  bool NonNegative(const Value* v) const {
    return v != nullptr && (set_.contains(v) || (v->is_constant() && ConstantIsNonNegative(*v)));
  }

  absl::StatusOr<bool> OutputsNonNegative(const Node& n) const {
    if (IsUnit(n)) {
      QFUSE_ASSIGN_OR_RETURN(UnitSpec spec, ReadUnitSpec(n));
      return IsNonNegativeActivation(spec);
    }
    if (std::optional<UnitSpec> spec = UnitActivationOf(n)) return IsNonNegativeActivation(*spec);
    if (IsAnyOf(n, kNonNegativeOps)) return true;
    if (KeepsInputQuantization(n) || IsAnyOf(n, kFollowsInputOps)) return NonNegative(n.input(0));
    if (IsAnyOf(n, {"Resize", "Upsample"})) {
      QFUSE_ASSIGN_OR_RETURN(std::string mode, n.attrs().GetString("mode", "nearest"));
      return mode != "cubic" && NonNegative(n.input(0));
    }
    if (IsAnyOf(n, {"Pad"})) {
      QFUSE_ASSIGN_OR_RETURN(std::string mode, n.attrs().GetString("mode", "constant"));
      if (mode != "constant") return NonNegative(n.input(0));
      // The pad value: input 2 (opset >= 11) or attribute "value" (before), 0 when absent.
      QFUSE_ASSIGN_OR_RETURN(float value, n.attrs().GetFloat("value", 0.f));
      const Value* pad_value = n.input(2);
      const bool pad_ok = pad_value == nullptr ? value >= 0.f : ConstantIsNonNegative(*pad_value);
      return pad_ok && NonNegative(n.input(0));
    }
    if (IsAnyOf(n, kAllOperandsOps)) {
      if (n.inputs().empty()) return false;
      for (const Value* in : n.inputs()) {
        if (!NonNegative(in)) return false;
      }
      return true;
    }
    if (IsAnyOf(n, {"Max"})) {
      for (const Value* in : n.inputs()) {
        if (NonNegative(in)) return true;
      }
    }
    return false;
  }

  absl::StatusOr<absl::flat_hash_set<const Value*>> Run(const Graph& graph) {
    QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.TopologicalOrder());
    for (const Node* n : order) {
      QFUSE_ASSIGN_OR_RETURN(bool non_negative, OutputsNonNegative(*n));
      if (!non_negative) continue;
      // Dropout's mask and the like are not data: only float outputs count.
      const size_t outputs = IsAnyOf(*n, {"Split"}) ? n->outputs().size() : 1;
      for (size_t i = 0; i < outputs && i < n->outputs().size(); ++i) {
        if (n->output(i) != nullptr) set_.insert(n->output(i));
      }
    }
    return std::move(set_);
  }

 private:
  absl::flat_hash_set<const Value*> set_;
};

}  // namespace

bool IsNonNegativeActivation(const UnitSpec& spec) {
  switch (spec.activation) {
    case UnitActivation::kRelu:
    case UnitActivation::kHardSigmoid:
    case UnitActivation::kSigmoid: return true;
    case UnitActivation::kRelu6:
    case UnitActivation::kClip: return spec.clip_min >= 0.f;
    default: return false;
  }
}

absl::StatusOr<absl::flat_hash_set<const Value*>> NonNegativeValues(const Graph& graph) {
  return SignPass().Run(graph);
}

}  // namespace qfuse::ir
