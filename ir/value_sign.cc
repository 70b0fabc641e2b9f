#include "ir/value_sign.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/types/span.h"
#include "base/status_macros.h"
#include "ir/int8_forms.h"
#include "ir/unit_activation_match.h"

namespace qfuse::ir {
namespace {

// Ops whose every output element is >= 0 (or NaN) whatever their input.
constexpr const char* kNonNegativeOps[] = {"Softmax", "Abs", "Exp", "Softplus", "Sqrt"};
// Ops whose outputs hold only values of input 0 or averages of them (with zero padding): their
// lower bound is input 0's (a bound is <= 0, so a zero pad keeps it).
constexpr const char* kFollowsInputOps[] = {
    "GlobalAveragePool", "AveragePool", "GlobalMaxPool", "Slice",      "Split",     "Gather",   "Tile",
    "Expand",            "DepthToSpace", "SpaceToDepth", "ReduceMax", "ReduceMin", "ReduceMean", "Dropout"};

// The smallest element of a FLOAT constant (nullopt: not one, empty, or NaN).
std::optional<float> ConstantMin(const Value& v) {
  const Tensor* t = v.initializer();
  if (t == nullptr || t->dtype() != DataType::kFloat32 || t->num_elements() == 0) return std::nullopt;
  float lo = 0.f;
  bool first = true;
  for (float x : t->values<float>()) {
    if (x != x) return std::nullopt;
    lo = first ? x : std::min(lo, x);
    first = false;
  }
  return lo;
}

class BoundPass {
 public:
  std::optional<float> Bound(const Value* v) const {
    if (v == nullptr) return std::nullopt;
    if (v->is_constant()) {
      std::optional<float> lo = ConstantMin(*v);
      if (lo.has_value()) return std::min(*lo, 0.f);
      return std::nullopt;
    }
    auto it = bounds_.find(v);
    if (it == bounds_.end()) return std::nullopt;
    return it->second;
  }

  absl::StatusOr<std::optional<float>> OutputBound(const Node& n) const {
    if (IsUnit(n)) {
      QFUSE_ASSIGN_OR_RETURN(UnitSpec spec, ReadUnitSpec(n));
      return ActivationLowerBound(spec);
    }
    if (std::optional<UnitSpec> spec = UnitActivationOf(n)) return ActivationLowerBound(*spec);
    if (IsAnyOf(n, kNonNegativeOps)) return std::optional<float>(0.f);
    if (KeepsInputQuantization(n) || IsAnyOf(n, kFollowsInputOps)) return Bound(n.input(0));
    if (IsAnyOf(n, {"ReduceSum"})) {  // a sum of many values >= L < 0 has no bound
      std::optional<float> lo = Bound(n.input(0));
      if (lo.has_value() && *lo >= 0.f) return lo;
      return std::optional<float>();
    }
    if (IsAnyOf(n, {"Resize", "Upsample"})) {
      QFUSE_ASSIGN_OR_RETURN(std::string mode, n.attrs().GetString("mode", "nearest"));
      if (mode == "cubic") return std::optional<float>();
      return Bound(n.input(0));
    }
    if (IsAnyOf(n, {"Pad"})) {
      std::optional<float> lo = Bound(n.input(0));
      QFUSE_ASSIGN_OR_RETURN(std::string mode, n.attrs().GetString("mode", "constant"));
      if (mode != "constant" || !lo.has_value()) return lo;
      // The pad value: input 2 (opset >= 11) or attribute "value" (before), 0 when absent.
      QFUSE_ASSIGN_OR_RETURN(float value, n.attrs().GetFloat("value", 0.f));
      std::optional<float> pad = n.input(2) == nullptr ? std::optional<float>(std::min(value, 0.f)) : Bound(n.input(2));
      if (!pad.has_value()) return std::optional<float>();
      return std::optional<float>(std::min(*lo, *pad));
    }
    if (IsAnyOf(n, {"Concat", "Min", "Add"})) {  // the least bound (Concat, Min) or their sum (Add)
      if (n.inputs().empty()) return std::optional<float>();
      float lo = 0.f;
      for (const Value* in : n.inputs()) {
        std::optional<float> b = Bound(in);
        if (!b.has_value()) return std::optional<float>();
        lo = IsAnyOf(n, {"Add"}) ? lo + *b : std::min(lo, *b);
      }
      return std::optional<float>(lo);
    }
    if (IsAnyOf(n, {"Mul"})) {  // non-negative times non-negative only
      for (const Value* in : n.inputs()) {
        std::optional<float> b = Bound(in);
        if (!b.has_value() || *b < 0.f) return std::optional<float>();
      }
      return std::optional<float>(0.f);
    }
    if (IsAnyOf(n, {"Max"})) {  // the largest bound of the bounded operands
      std::optional<float> lo;
      for (const Value* in : n.inputs()) {
        std::optional<float> b = Bound(in);
        if (b.has_value()) lo = lo.has_value() ? std::max(*lo, *b) : *b;
      }
      return lo;
    }
    return std::optional<float>();
  }

  absl::StatusOr<ValueLowerBounds> Run(const Graph& graph) {
    QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.TopologicalOrder());
    for (const Node* n : order) {
      QFUSE_ASSIGN_OR_RETURN(std::optional<float> lo, OutputBound(*n));
      if (!lo.has_value()) continue;
      // Dropout's mask and the like are not data: only Split has several data outputs.
      const size_t outputs = IsAnyOf(*n, {"Split"}) ? n->outputs().size() : 1;
      for (size_t i = 0; i < outputs && i < n->outputs().size(); ++i) {
        if (n->output(i) != nullptr) bounds_[n->output(i)] = *lo;
      }
    }
    return std::move(bounds_);
  }

 private:
  ValueLowerBounds bounds_;
};

}  // namespace

std::optional<float> ActivationLowerBound(const UnitSpec& spec) {
  switch (spec.activation) {
    case UnitActivation::kRelu:
    case UnitActivation::kHardSigmoid:
    case UnitActivation::kSigmoid: return 0.f;
    case UnitActivation::kRelu6:
    case UnitActivation::kClip: return std::min(spec.clip_min, 0.f);
    case UnitActivation::kHardSwish: return kHardSwishMin;
    case UnitActivation::kSilu: return kSiluMin;
    default: return std::nullopt;
  }
}

bool IsNonNegativeActivation(const UnitSpec& spec) {
  std::optional<float> lo = ActivationLowerBound(spec);
  return lo.has_value() && *lo >= 0.f;
}

absl::StatusOr<ValueLowerBounds> LowerBounds(const Graph& graph) { return BoundPass().Run(graph); }

absl::StatusOr<ValueLowerBounds> NonNegativeValues(const Graph& graph) {
  QFUSE_ASSIGN_OR_RETURN(ValueLowerBounds bounds, LowerBounds(graph));
  ValueLowerBounds non_negative;
  for (const auto& [v, lo] : bounds) {
    if (lo >= 0.f) non_negative[v] = lo;
  }
  return non_negative;
}

}  // namespace qfuse::ir
