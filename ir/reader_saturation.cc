#include "ir/reader_saturation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "ir/int8_forms.h"
#include "ir/unit_activation_match.h"

namespace qfuse::ir {
namespace {

// Beyond the int8 table's data movement (ir/int8_forms.h: KeepsInputQuantization), ops whose data
// outputs hold elements of their data inputs, or the max / min of some of them: clipping commutes
// with them, so a bound on every output carries over to the inputs exactly.
constexpr const char* kMovesElementsOps[] = {"Slice",         "Split",        "Gather",       "Tile",
                                             "Expand",        "DepthToSpace", "SpaceToDepth", "Concat",
                                             "GlobalMaxPool", "ReduceMax",    "ReduceMin"};

// B of a saturating reader of its input 0 (nullopt: `n` is not one).
std::optional<ReaderBound> SaturationOf(const Node& n) {
  if (IsAnyOf(n, {"Tanh"})) return ReaderBound{kTanhSaturation, "Tanh"};
  std::optional<UnitSpec> spec = UnitActivationOf(n);
  if (!spec.has_value()) return std::nullopt;
  float magnitude = 0.f;
  switch (spec->activation) {
    case UnitActivation::kSigmoid:
      magnitude = kSigmoidSaturation;
      break;
    case UnitActivation::kHardSigmoid:
      if (spec->alpha == 0.f) return std::nullopt;
      magnitude = std::max(std::abs(spec->beta / spec->alpha), std::abs((1.f - spec->beta) / spec->alpha));
      break;
    case UnitActivation::kRelu6:
    case UnitActivation::kClip: {
      const ClampRange clamp = spec->ClampBounds();
      // A NaN bound clamps nothing (std::min / std::max keep the value, as the kernels do).
      if (std::isnan(clamp.lo) || std::isnan(clamp.hi)) return std::nullopt;
      magnitude = std::max(std::abs(clamp.lo), std::abs(clamp.hi));
      break;
    }
    default:
      return std::nullopt;
  }
  // An absent Clip bound is the float range; a degenerate reader keeps nothing to bound by.
  if (!(magnitude > 0.f) || magnitude >= std::numeric_limits<float>::max()) return std::nullopt;
  return ReaderBound{magnitude, n.op_type()};
}

class BoundPass {
 public:
  absl::StatusOr<ReaderBounds> Run(const Graph& graph) {
    QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.TopologicalOrder());
    // Every reader's outputs before the value it reads: values by their producers, last first,
    // then the graph inputs.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      for (const Value* out : (*it)->outputs()) Visit(out);
    }
    for (const Value* in : graph.inputs()) Visit(in);
    return std::move(bounds_);
  }

 private:
  void Visit(const Value* v) {
    if (v == nullptr || v->is_constant() || v->is_graph_output() || v->uses().empty()) return;
    std::optional<ReaderBound> bound;
    for (const Use& use : v->uses()) {
      if (IsAnyOf(*use.node, {"Shape", "Size"})) continue;  // they read no element
      std::optional<ReaderBound> b = UseBound(*use.node, use.input_index);
      if (!b.has_value()) return;
      if (!bound.has_value() || b->magnitude > bound->magnitude) bound = b;
    }
    if (bound.has_value()) bounds_[v] = *bound;
  }

  // The bound that reader `n` puts on its input `index` (nullopt: none). `n`'s outputs are
  // visited already.
  std::optional<ReaderBound> UseBound(const Node& n, int index) const {
    if (index == 0) {
      if (std::optional<ReaderBound> b = SaturationOf(n)) return b;
    }
    const bool moves =
        (KeepsInputQuantization(n) || IsAnyOf(n, kMovesElementsOps)) && (index == 0 || IsAnyOf(n, {"Concat"}));
    bool resizes = false;
    if (index == 0 && IsAnyOf(n, {"Resize", "Upsample"})) {
      absl::StatusOr<std::string> mode = n.attrs().GetString("mode", "nearest");
      resizes = mode.ok() && *mode != "cubic";
    }
    if (!moves && !resizes && !(index == 0 && IsCastToOwnType(n))) return std::nullopt;
    // Data outputs: all of Split's, output 0 of the others (MaxPool's Indices must be unused).
    const size_t data_outputs = IsAnyOf(n, {"Split"}) ? n.outputs().size() : 1;
    for (size_t i = data_outputs; i < n.outputs().size(); ++i) {
      const Value* other = n.output(i);
      if (other != nullptr && (!other->uses().empty() || other->is_graph_output())) return std::nullopt;
    }
    std::optional<ReaderBound> bound;
    for (size_t i = 0; i < data_outputs; ++i) {
      const Value* out = n.output(i);
      if (out == nullptr) continue;
      auto it = bounds_.find(out);
      if (it == bounds_.end()) return std::nullopt;
      if (!bound.has_value() || it->second.magnitude > bound->magnitude) bound = it->second;
    }
    return bound;
  }

  ReaderBounds bounds_;
};

}  // namespace

absl::StatusOr<ReaderBounds> SaturatingReaderBounds(const Graph& graph) { return BoundPass().Run(graph); }

}  // namespace qfuse::ir
