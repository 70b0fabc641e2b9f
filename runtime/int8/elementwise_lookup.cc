#include "runtime/int8/elementwise_lookup.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "ir/unit_activation_match.h"
#include "numerics/requantize.h"
#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::Node;
using ir::Value;

constexpr size_t kMaxChainOps = 32;

bool IsBinary(const Node& n) {
  return n.op_type() == "Add" || n.op_type() == "Sub" || n.op_type() == "Mul" || n.op_type() == "Div";
}

// A FLOAT constant of one element whose rank does not exceed the chain's (it broadcasts
// without changing the chain value's shape).
std::optional<float> ScalarOperand(const Value* v, const Value& x) {
  if (v == nullptr || !v->is_constant()) return std::nullopt;
  const ir::Tensor& t = *v->initializer();
  if (t.dtype() != ir::DataType::kFloat32 || t.num_elements() != 1) return std::nullopt;
  const ir::Shape& shape = x.type().shape;
  if (t.rank() > 0 && (!shape.rank_known || t.rank() > shape.rank())) return std::nullopt;
  return t.data<float>()[0];
}

// The activation a unary chain op computes, or nullopt (Sigmoid is left to pattern (k)).
std::optional<ir::UnitSpec> UnaryActivation(const Node& n) {
  if (n.op_type() != "Relu" && n.op_type() != "Clip" && n.op_type() != "HardSigmoid" && n.op_type() != "HardSwish" &&
      n.op_type() != "LeakyRelu") {
    return std::nullopt;
  }
  return ir::UnitActivationOf(n);
}

// Whether `n` may sit in a chain whose values are `chain` (its non-constant operands all in
// it): an elementwise op of chain values and scalar constants, divisors constant and not 0.
bool ChainOp(const Node& n, const absl::flat_hash_set<const Value*>& chain, const Value& x) {
  if (!n.domain().empty() || n.outputs().size() != 1 || n.output(0)->is_graph_output()) return false;
  if (IsBinary(n)) {
    if (n.inputs().size() != 2) return false;
    for (int i : {0, 1}) {
      const Value* v = n.input(i);
      if (chain.contains(v)) {
        if (n.op_type() == "Div" && i == 1) return false;
        continue;
      }
      std::optional<float> c = ScalarOperand(v, x);
      if (!c.has_value() || (n.op_type() == "Div" && i == 1 && !(*c != 0.f && std::isfinite(*c)))) return false;
    }
    return chain.contains(n.input(0)) || chain.contains(n.input(1));
  }
  if (!UnaryActivation(n).has_value() || !chain.contains(n.input(0))) return false;
  for (size_t i = 1; i < n.inputs().size(); ++i) {  // Clip's bounds: constants (UnitActivationOf checked)
    if (n.input(i) != nullptr && chain.contains(n.input(i))) return false;
  }
  return true;
}

// One op on one element, as qfuse's float kernels compute it.
float ApplyChainOp(const Node& n, const absl::flat_hash_map<const Value*, float>& values) {
  const auto operand = [&](int i) {
    auto it = values.find(n.input(i));
    return it != values.end() ? it->second : n.input(i)->initializer()->data<float>()[0];
  };
  if (n.op_type() == "Add") return operand(0) + operand(1);
  if (n.op_type() == "Sub") return operand(0) - operand(1);
  if (n.op_type() == "Mul") return operand(0) * operand(1);
  if (n.op_type() == "Div") return operand(0) / operand(1);
  return ir::ApplyUnitActivation(*UnaryActivation(n), operand(0));
}

}  // namespace

std::vector<std::string> ElementwiseLookupPattern::ChainOps() {
  return {"Add", "Sub", "Mul", "Div", "Relu", "Clip", "HardSigmoid", "HardSwish", "LeakyRelu"};
}

std::optional<ElementwiseLookupMatch> ElementwiseLookupPattern::Match(const ir::Graph& graph,
                                                                      const ir::Node& anchor) const {
  // The dequantized x the anchor reads.
  std::optional<DqOperand> x;
  const Value* dq_out = nullptr;
  for (const Value* v : anchor.inputs()) {
    if (v == nullptr || v->producer() == nullptr || v->producer()->op_type() != "DequantizeLinear") continue;
    x = MatchDqActivation(v);
    if (x.has_value()) {
      dq_out = v;
      break;
    }
  }
  if (!x.has_value() || dq_out->is_graph_output()) return std::nullopt;
  // Grow the chain from x in dependency order: an op joins once all its operands are chain
  // values or scalar constants.
  absl::flat_hash_set<const Value*> chain = {dq_out};
  std::vector<const Node*> nodes;  // in dependency order
  std::vector<const Node*> pending;
  absl::flat_hash_set<const Node*> seen;
  const auto add_readers = [&](const Value* v) {
    for (const ir::Use& use : v->uses()) {
      if (seen.insert(use.node).second) pending.push_back(use.node);
    }
  };
  add_readers(dq_out);
  const Node* sink_q = nullptr;
  const Value* last = nullptr;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < pending.size(); ++i) {
      const Node* n = pending[i];
      if (n->op_type() == "QuantizeLinear") continue;
      if (!ChainOp(*n, chain, *dq_out)) continue;
      const bool ready = std::all_of(n->inputs().begin(), n->inputs().end(), [&](const Value* v) {
        return v == nullptr || chain.contains(v) || v->is_constant();
      });
      if (!ready) continue;
      nodes.push_back(n);
      chain.insert(n->output(0));
      add_readers(n->output(0));
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      progress = true;
      break;
    }
    if (nodes.size() > kMaxChainOps) return std::nullopt;
  }
  if (nodes.empty()) return std::nullopt;
  // Every reader of every chain value is in the chain, but for one QuantizeLinear reading the last.
  for (const Node* n : pending) {
    if (n->op_type() != "QuantizeLinear" || sink_q != nullptr) return std::nullopt;
    sink_q = n;
  }
  if (sink_q == nullptr) return std::nullopt;
  last = sink_q->input(0);
  if (last == nullptr || last == dq_out || !chain.contains(last)) return std::nullopt;
  // Every op's output is read (an op nothing reads is not part of what the Q sees).
  for (const Node* n : nodes) {
    if (n->output(0)->uses().empty()) return std::nullopt;
  }
  std::optional<Sink> sink = MatchQuantizeSink(*last);
  if (!sink.has_value()) return std::nullopt;
  // The anchor is one of the ops (not, say, a Mul of x by a tensor).
  if (std::find(nodes.begin(), nodes.end(), &anchor) == nodes.end()) return std::nullopt;
  // Pattern (k) and the other single-op patterns keep their own forms; a chain of one
  // activation is theirs.
  if (nodes.size() == 1 && !IsBinary(*nodes[0])) return std::nullopt;
  ElementwiseLookupMatch m{{}, anchor.id(), *x, *sink};
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) m.nodes.push_back((*it)->id());
  (void)graph;
  return m;
}

absl::Status ElementwiseLookupPattern::Rewrite(ir::Graph* graph, const ElementwiseLookupMatch& m) const {
  const Node* dq = graph->FindNode(m.x.dq);
  const Value* dq_out = dq->output(0);
  const ir::DataType x_type = DequantizeInput(*graph, m.x)->type().dtype;
  std::vector<const Node*> order;  // dependency order
  for (auto it = m.nodes.rbegin(); it != m.nodes.rend(); ++it) order.push_back(graph->FindNode(*it));
  const float s_x = m.x.params.scales[0], s_y = m.sink.params.scales[0];
  const int32_t zp_x = m.x.params.zero_points.empty() ? 0 : static_cast<int32_t>(m.x.params.zero_points[0]);
  const int32_t zp_y = m.sink.params.zero_points.empty() ? 0 : static_cast<int32_t>(m.sink.params.zero_points[0]);
  std::vector<int64_t> table(256);
  absl::flat_hash_map<const Value*, float> values;
  for (int raw = 0; raw < 256; ++raw) {
    const int32_t q = x_type == ir::DataType::kInt8 ? static_cast<int8_t>(raw) : raw;
    values.clear();
    values[dq_out] = numerics::Dequantize(q, s_x, zp_x);
    for (const Node* n : order) values[n->output(0)] = ApplyChainOp(*n, values);
    const float y = values.at(graph->FindNode(m.sink.q)->input(0));
    table[raw] = m.sink.qtype == ir::DataType::kInt8
                     ? static_cast<uint8_t>(numerics::QuantizeLinear<int8_t>(y, s_y, zp_y))
                     : numerics::QuantizeLinear<uint8_t>(y, s_y, zp_y);
  }
  ir::AttributeMap attrs;
  attrs.Set(kLookupTableAttr, table);
  return replacer_.Replace(graph, Group{m.nodes, m.sink, m.anchor}, kQLinearLookupOp, {QuantizedInput(graph, m.x)},
                           std::move(attrs));
}

}  // namespace qfuse::runtime::int8
