#include "quant/shared_ranges.h"

#include <utility>

#include "ir/int8_forms.h"

namespace qfuse::quant {
namespace {

using ir::Node;
using ir::Value;

bool Is(const Node& n, const char* op) { return n.domain().empty() && n.op_type() == op; }

class Planner {
 public:
  explicit Planner(const RangeSharingContext& context) : context_(context) {}

  // Concat inputs take the Concat output's range when every input of an int8 Concat is read by
  // that Concat alone and has its own calibrated range (the output of a unit or another op that
  // rounds, not a value that keeps its input's quantization): the Concat then only moves bytes,
  // and each branch rounds once instead of twice (its own grid, then the Concat's) and is not
  // clipped at a narrower range than the Concat's. (Inception's and SqueezeNet's Concats; not
  // DenseNet's, whose feature maps feed many.) Only where every input has the Concat's kind of
  // grid, so that no input's zero point moves.
  void PlanConcat(const Node& concat) {
    if (!context_.share_concat_ranges || !Is(concat, "Concat") || concat.inputs().empty() ||
        !HasOnlyOutput(concat) || !context_.runs_int8(&concat)) {
      return;
    }
    const Value* out = concat.output(0);
    for (const Value* in : concat.inputs()) {
      if (!OwnRangeReadOnlyBy(in, concat) || !SameKindOfGrid(in, out)) return;
    }
    for (const Value* in : concat.inputs()) shared_[in] = out;
  }

  SharedRanges Take() { return std::move(shared_); }

 private:
  // One output, a calibrated activation.
  bool HasOnlyOutput(const Node& n) const {
    if (n.outputs().size() != 1 || n.output(0) == nullptr) return false;
    const Value* out = n.output(0);
    return context_.is_activation(out) && context_.table->Find(out->name()) != nullptr;
  }

  // `in` is an activation with its own calibrated range, read by `reader` alone, made by an op
  // that rounds to it (not one that keeps its input's quantization, averages it, or a Softmax,
  // whose scale has its own rule; not a graph input).
  bool OwnRangeReadOnlyBy(const Value* in, const Node& reader) const {
    if (in == nullptr || in->is_constant() || in->is_graph_output() || !context_.is_activation(in) ||
        context_.table->Find(in->name()) == nullptr) {
      return false;
    }
    for (const ir::Use& use : in->uses()) {
      if (use.node != &reader) return false;
    }
    const Node* p = in->producer();
    if (p == nullptr) return false;  // a graph input keeps the range calibrated on it
    if (context_.kept_float(p) || ir::KeepsInputQuantization(*p) || ir::IsAveragePool(*p) || Is(*p, "Softmax")) {
      return false;
    }
    return !Is(*p, "Concat");
  }

  // The same lower bound by construction and, for observed-sign grids, the same observed sign.
  bool SameKindOfGrid(const Value* a, const Value* b) const {
    if (context_.lower_bounds != nullptr) {
      const auto bound_a = context_.lower_bounds->find(a);
      const auto bound_b = context_.lower_bounds->find(b);
      const bool has_a = bound_a != context_.lower_bounds->end();
      const bool has_b = bound_b != context_.lower_bounds->end();
      if (has_a != has_b || (has_a && bound_a->second != bound_b->second)) return false;
    }
    if (context_.observed_sign_grids) {
      return (context_.table->Find(a->name())->min >= 0) == (context_.table->Find(b->name())->min >= 0);
    }
    return true;
  }

  const RangeSharingContext& context_;
  SharedRanges shared_;
};

}  // namespace

SharedRanges PlanSharedRanges(const std::vector<Node*>& order, const RangeSharingContext& context) {
  Planner planner(context);
  for (const Node* node : order) planner.PlanConcat(*node);
  return planner.Take();
}

}  // namespace qfuse::quant
