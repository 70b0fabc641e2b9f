#include "runtime/int8/gelu_fusion.h"

#include <cmath>
#include <string>
#include <utility>

#include "ir/fused_unit.h"
#include "runtime/int8/float_chain.h"
#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {
namespace {

// A one-element FLOAT constant of rank <= max_rank for which `accept` holds.
template <typename Accept>
bool IsScalarConstant(const ir::Value* v, size_t max_rank, Accept accept) {
  const std::optional<float> value = ConstantScalar(v);
  return value.has_value() && v->initializer()->dims().size() <= max_rank && accept(*value);
}

bool IsSqrt2(float c) { return std::abs(static_cast<double>(c) - std::sqrt(2.0)) <= 1e-6; }

}  // namespace

std::optional<GeluMatch> GeluPattern::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  (void)graph;
  if (!IsOnnxOp(&anchor, "Erf")) return std::nullopt;
  // d = Div(x, sqrt 2), read by the Erf alone.
  const ir::Value* d = anchor.input(0);
  const ir::Node* div = d->producer();
  if (!IsOnnxOp(div, "Div") || SoleReader(d, "Erf", 0) != &anchor) return std::nullopt;
  ir::Value* x = div->input(0);
  if (!IsFloatValue(x)) return std::nullopt;
  // Constants of shape [1] broadcast without changing x's shape only when x has a rank.
  const size_t max_rank = x->type().shape.rank_known && x->type().shape.rank() >= 1 ? 1 : 0;
  if (!IsScalarConstant(div->input(1), max_rank, IsSqrt2)) return std::nullopt;
  // a = Add(erf, 1), then Mul(a, x) -> Mul(., 0.5) or Mul(a, Mul(x, 0.5)).
  const ir::Node* add = SoleBinaryReader(anchor.output(0), "Add");
  if (add == nullptr || !IsScalarConstant(OtherInput(*add, anchor.output(0)), max_rank, [](float c) { return c == 1.0f; })) {
    return std::nullopt;
  }
  const ir::Node* mul = SoleBinaryReader(add->output(0), "Mul");
  if (mul == nullptr) return std::nullopt;
  const ir::Value* other = OtherInput(*mul, add->output(0));
  if (other == nullptr) return std::nullopt;
  auto is_half = [](float c) { return c == 0.5f; };
  GeluMatch m;
  m.x = x;
  m.as_chain = CopiedPerReader(x);
  m.divisor = *ConstantScalar(div->input(1));
  m.half_first = other != x;
  if (other == x) {
    const ir::Node* half = SoleBinaryReader(mul->output(0), "Mul");
    if (half == nullptr || !IsScalarConstant(OtherInput(*half, mul->output(0)), max_rank, is_half)) return std::nullopt;
    m.chain = {div->id(), anchor.id(), add->id(), mul->id(), half->id()};
  } else {
    const ir::Node* half = other->producer();
    if (!IsOnnxOp(half, "Mul") || SoleBinaryReader(other, "Mul") != mul ||
        !IsScalarConstant(OtherInput(*half, x), max_rank, is_half)) {
      return std::nullopt;
    }
    m.chain = {div->id(), half->id(), anchor.id(), add->id(), mul->id()};
  }
  if (!IsFloatValue(graph.FindNode(m.chain.back())->output(0))) return std::nullopt;
  return m;
}

absl::Status GeluPattern::Rewrite(ir::Graph* graph, const GeluMatch& m) const {
  ir::AttributeMap attrs;
  if (m.as_chain) {
    attrs.Set(kGeluDivisorAttr, m.divisor);
    attrs.Set(kGeluHalfFirstAttr, static_cast<int64_t>(m.half_first));
  }
  return ReplaceFloatChain(graph, replacer_, m.chain, kGeluOp, {m.x}, std::move(attrs), ir::kQfuseDomain);
}

}  // namespace qfuse::runtime::int8
