#include "ir/unit_activation_match.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/match.h"

namespace qfuse::ir {
namespace {

bool Is(const Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

// Constant FLOAT scalar input `index` of `n` (absent: `fallback`).
std::optional<float> ScalarInput(const Node& n, int index, float fallback) {
  const Value* v = n.input(index);
  if (v == nullptr) return fallback;
  if (!v->is_constant() || v->initializer()->dtype() != DataType::kFloat32 || v->initializer()->num_elements() != 1) {
    return std::nullopt;
  }
  return v->initializer()->values<float>()[0];
}

std::optional<float> FloatAttr(const Node& n, const char* name, float fallback) {
  absl::StatusOr<float> v = n.attrs().GetFloat(name, fallback);
  if (!v.ok()) return std::nullopt;
  return *v;
}

}  // namespace

std::optional<UnitSpec> UnitActivationOf(const Node& n) {
  if (n.outputs().size() != 1 || n.input(0) == nullptr) return std::nullopt;
  UnitSpec spec;
  if (Is(&n, "Relu")) {
    spec.activation = UnitActivation::kRelu;
  } else if (Is(&n, "Clip")) {
    std::optional<float> lo = ScalarInput(n, 1, std::numeric_limits<float>::lowest());
    std::optional<float> hi = ScalarInput(n, 2, std::numeric_limits<float>::max());
    if (!lo.has_value() || !hi.has_value()) return std::nullopt;
    spec = ClipSpec(*lo, *hi);
  } else if (Is(&n, "HardSwish")) {
    spec.activation = UnitActivation::kHardSwish;
  } else if (Is(&n, "HardSigmoid")) {
    std::optional<float> alpha = FloatAttr(n, "alpha", 0.2f), beta = FloatAttr(n, "beta", 0.5f);
    if (!alpha.has_value() || !beta.has_value()) return std::nullopt;
    spec.activation = UnitActivation::kHardSigmoid;
    spec.alpha = *alpha;
    spec.beta = *beta;
  } else if (Is(&n, "Sigmoid")) {
    spec.activation = UnitActivation::kSigmoid;
  } else if (Is(&n, "LeakyRelu")) {
    std::optional<float> alpha = FloatAttr(n, "alpha", 0.01f);
    if (!alpha.has_value()) return std::nullopt;
    spec.activation = UnitActivation::kLeakyRelu;
    spec.alpha = *alpha;
  } else {
    return std::nullopt;
  }
  return spec;
}

namespace {

// The single-input activation `n` reading x, or nullopt. A unit's clamp must be ordered (lo <= hi).
std::optional<UnitSpec> SingleOp(const Node& n, const Value& x) {
  if (n.input(0) != &x) return std::nullopt;
  std::optional<UnitSpec> spec = UnitActivationOf(n);
  if (!spec.has_value()) return std::nullopt;
  const ClampRange bounds = spec->ClampBounds();
  if (!(bounds.lo <= bounds.hi)) return std::nullopt;
  return spec;
}

// x * gate(x): `gate` is Sigmoid or HardSigmoid(1/6, 1/2) of x, `mul` reads x and the gate.
std::optional<UnitActivationMatch> GatedProduct(const Value& x, Node* gate, Node* mul) {
  if (!Is(mul, "Mul") || mul->inputs().size() != 2 || gate->outputs().size() != 1) return std::nullopt;
  const Value* g = gate->output(0);
  const bool operands = (mul->input(0) == &x && mul->input(1) == g) || (mul->input(1) == &x && mul->input(0) == g);
  if (!operands || g->uses().size() != 1 || g->is_graph_output()) return std::nullopt;
  std::optional<UnitSpec> gate_spec = SingleOp(*gate, x);
  if (!gate_spec.has_value()) return std::nullopt;
  UnitActivationMatch m;
  if (gate_spec->activation == UnitActivation::kSigmoid) {
    m.spec.activation = UnitActivation::kSilu;
  } else if (gate_spec->activation == UnitActivation::kHardSigmoid && std::abs(gate_spec->alpha - 1.f / 6.f) <= 1e-6f &&
             gate_spec->beta == 0.5f) {
    m.spec.activation = UnitActivation::kHardSwish;
  } else {
    return std::nullopt;
  }
  m.nodes = {mul, gate};
  m.output = mul->output(0);
  return m;
}

}  // namespace

std::optional<UnitActivationMatch> MatchUnitActivation(const Value& x) {
  if (x.is_graph_output()) return std::nullopt;
  const std::vector<Use>& uses = x.uses();
  if (uses.size() == 1) {
    std::optional<UnitSpec> spec = SingleOp(*uses[0].node, x);
    if (!spec.has_value()) return std::nullopt;
    return UnitActivationMatch{*spec, {uses[0].node}, uses[0].node->output(0)};
  }
  if (uses.size() == 2 && uses[0].node != uses[1].node) {
    for (int gate = 0; gate < 2; ++gate) {
      Node* g = uses[gate].node;
      if (!Is(g, "Sigmoid") && !Is(g, "HardSigmoid")) continue;
      if (std::optional<UnitActivationMatch> m = GatedProduct(x, g, uses[1 - gate].node); m.has_value()) return m;
    }
  }
  return std::nullopt;
}

namespace {

// Empty, or a symbol onnx's shape inference made up for an unknown dim.
bool IsInventedSymbol(const std::string& symbol) { return symbol.empty() || absl::StartsWith(symbol, "unk__"); }

}  // namespace

bool ResidualShapeFits(const Value& residual, const Value& acc) {
  const Shape& a = residual.type().shape;
  const Shape& b = acc.type().shape;
  if (!a.rank_known || !b.rank_known || a.rank() != b.rank()) return false;
  for (int64_t i = 0; i < a.rank(); ++i) {
    const Dim& x = a.dims[i];
    const Dim& y = b.dims[i];
    if (x.is_known() || y.is_known()) {
      if (x.value != y.value) return false;
    } else if (x.symbol != y.symbol && !IsInventedSymbol(x.symbol) && !IsInventedSymbol(y.symbol)) {
      return false;  // two different named dims: different by intent
    }
  }
  return true;
}

}  // namespace qfuse::ir
