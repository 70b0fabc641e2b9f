#include "runtime/int8/qdq_lowering.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/fused_unit.h"
#include "ir/int8_forms.h"
#include "ir/status_macros.h"
#include "ir/unit_activation_match.h"
#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::DataType;
using ir::Node;
using ir::QuantParams;
using ir::Value;

bool Is(const Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

// `v` is read by exactly one node input and is not a graph output.
bool SingleUse(const Value* v) { return v != nullptr && v->uses().size() == 1 && !v->is_graph_output(); }

// Scale and zero point inputs (1, 2) and axis of a QuantizeLinear / DequantizeLinear
// node, when constant. `qtype` is the quantized type (INT8/UINT8/INT32).
struct QdqParams {
  QuantParams params;
  DataType qtype = DataType::kUndefined;
};

std::optional<QdqParams> ReadQdqParams(const Node& n, DataType qtype) {
  const Value* scale = n.input(1);
  const Value* zp = n.input(2);
  if (scale == nullptr || !scale->is_constant() || scale->initializer()->dtype() != DataType::kFloat32) return std::nullopt;
  const ir::Tensor& s = *scale->initializer();
  if (s.rank() > 1 || s.num_elements() < 1) return std::nullopt;
  QdqParams out;
  out.qtype = qtype;
  for (float v : s.values<float>()) {
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    out.params.scales.push_back(v);
  }
  const int64_t count = s.num_elements();
  if (zp == nullptr) {
    if (qtype != DataType::kUint8 && qtype != DataType::kInt32) return std::nullopt;
    out.params.zero_points.assign(count, 0);
  } else {
    if (!zp->is_constant() || zp->initializer()->dtype() != qtype || zp->initializer()->num_elements() != count) {
      return std::nullopt;
    }
    const ir::Tensor& z = *zp->initializer();
    for (int64_t i = 0; i < count; ++i) {
      switch (qtype) {
        case DataType::kInt8: out.params.zero_points.push_back(z.data<int8_t>()[i]); break;
        case DataType::kUint8: out.params.zero_points.push_back(z.data<uint8_t>()[i]); break;
        case DataType::kInt32: out.params.zero_points.push_back(z.data<int32_t>()[i]); break;
        default: return std::nullopt;
      }
    }
  }
  if (s.rank() == 1 && count > 1) {
    absl::StatusOr<int64_t> axis = n.attrs().GetInt("axis", 1);
    if (!axis.ok()) return std::nullopt;
    out.params.axis = *axis;
  }
  return out;
}

// A per-tensor quantized activation read through DequantizeLinear.
struct DqActivation {
  Value* q = nullptr;
  QuantParams params;
};

std::optional<DqActivation> MatchDqActivation(Value* v) {
  if (v == nullptr || !Is(v->producer(), "DequantizeLinear")) return std::nullopt;
  const Node& dq = *v->producer();
  Value* q = dq.input(0);
  if (q == nullptr || q->is_constant() || (q->type().dtype != DataType::kInt8 && q->type().dtype != DataType::kUint8)) {
    return std::nullopt;
  }
  std::optional<QdqParams> p = ReadQdqParams(dq, q->type().dtype);
  if (!p.has_value() || p->params.scales.size() != 1) return std::nullopt;
  p->params.axis.reset();
  if (q->type().quant.has_value() && !(*q->type().quant == p->params)) return std::nullopt;
  return DqActivation{q, p->params};
}

// A constant (INT8 weights / INT32 bias) read through DequantizeLinear.
struct DqConstant {
  Value* data = nullptr;
  QuantParams params;
};

std::optional<DqConstant> MatchDqConstant(Value* v, DataType dtype) {
  if (v == nullptr || !Is(v->producer(), "DequantizeLinear")) return std::nullopt;
  const Node& dq = *v->producer();
  Value* data = dq.input(0);
  if (data == nullptr || !data->is_constant() || data->initializer()->dtype() != dtype) return std::nullopt;
  std::optional<QdqParams> p = ReadQdqParams(dq, dtype);
  if (!p.has_value()) return std::nullopt;
  if (p->params.axis.has_value() && *p->params.axis < 0) *p->params.axis += data->initializer()->rank();
  return DqConstant{data, p->params};
}

// Where a group ends: a QuantizeLinear (per tensor, constant params) or a float graph output.
struct Sink {
  Node* q = nullptr;      // null for a graph output
  Value* value = nullptr;  // the float value quantized (or output)
  QuantParams params;
  DataType qtype = DataType::kUndefined;
};

std::optional<Sink> MatchQuantizeSink(Node* q) {
  Value* y = q->input(0);
  if (y == nullptr || y->type().dtype != DataType::kFloat32 || !SingleUse(y) || y->producer() == nullptr) return std::nullopt;
  const Value* zp = q->input(2);
  const DataType qtype = zp != nullptr && zp->is_constant() ? zp->initializer()->dtype() : DataType::kUint8;
  if (qtype != DataType::kInt8 && qtype != DataType::kUint8) return std::nullopt;
  std::optional<QdqParams> p = ReadQdqParams(*q, qtype);
  if (!p.has_value() || p->params.scales.size() != 1) return std::nullopt;
  p->params.axis.reset();
  return Sink{q, y, p->params, qtype};
}

bool SameKnownShape(const Value* a, const Value* b) {
  return a->type().shape.rank_known && a->type().shape == b->type().shape;
}

// Group (a).
struct UnitMatch {
  std::vector<Node*> chain;  // float ops, last first
  Node* base = nullptr;
  DqActivation x;
  DqConstant w;
  std::optional<DqConstant> bias;
  std::optional<DqActivation> residual;
  ir::UnitSpec spec;  // base op and activation
};

// The base ops with an integer unit kernel (not ConvTranspose).
bool IsBaseOp(const Node* n) {
  const std::optional<ir::UnitBaseOp> op = n == nullptr ? std::nullopt : ir::UnitBaseOpOf(*n);
  return op.has_value() && *op != ir::UnitBaseOp::kConvTranspose;
}

// Checks the bias scale is s_x * s_w[c] and its zero point 0.
bool BiasMatches(const DqConstant& b, float x_scale, const QuantParams& w, int64_t channels) {
  if (b.data->initializer()->num_elements() != channels || b.data->initializer()->rank() != 1) return false;
  for (int64_t c = 0; c < channels; ++c) {
    const size_t bi = b.params.scales.size() == 1 ? 0 : c, wi = w.scales.size() == 1 ? 0 : c;
    if (bi >= b.params.scales.size() || wi >= w.scales.size() || b.params.zero_points[bi] != 0) return false;
    const double expected = static_cast<double>(x_scale) * w.scales[wi];
    if (std::abs(b.params.scales[bi] - expected) > 1e-5 * expected) return false;
  }
  return true;
}

// The value a unit activation producing `y` would read: the input of a one-op activation,
// or x of Mul(x, Sigmoid | HardSigmoid(x)); nullptr when `p` is no activation.
Value* PreActivation(const Node* p) {
  for (const char* op : {"Relu", "Clip", "HardSwish", "HardSigmoid", "Sigmoid", "LeakyRelu"}) {
    if (Is(p, op)) return p->input(0);
  }
  if (Is(p, "Mul") && p->inputs().size() == 2) {
    for (int side = 0; side < 2; ++side) {
      const Node* gate = p->input(side)->producer();
      if ((Is(gate, "Sigmoid") || Is(gate, "HardSigmoid")) && gate->input(0) == p->input(1 - side)) {
        return p->input(1 - side);
      }
    }
  }
  return nullptr;
}

std::optional<UnitMatch> MatchUnit(Value* y) {
  UnitMatch m;
  Value* cur = y;
  Node* p = cur->producer();
  // The activation, in exactly the forms unit formation accepts.
  if (Value* x = PreActivation(p); x != nullptr) {
    std::optional<ir::UnitActivationMatch> act = ir::MatchUnitActivation(*x);
    if (!act.has_value() || act->output != y) return std::nullopt;
    m.spec = act->spec;
    m.chain.insert(m.chain.end(), act->nodes.begin(), act->nodes.end());
    cur = x;
    p = cur->producer();
  }
  // Residual Add: one side a quantized activation of the same shape, the other the accumulator.
  if (Is(p, "Add")) {
    for (int side = 0; side < 2; ++side) {
      Value* other = p->input(1 - side);
      if (!SingleUse(other) || !(IsBaseOp(other->producer()) || Is(other->producer(), "Add"))) continue;
      std::optional<DqActivation> r = MatchDqActivation(p->input(side));
      if (!r.has_value() || !ir::ResidualShapeFits(*r->q, *y)) continue;  // activations keep the shape
      m.residual = r;
      m.chain.push_back(p);
      cur = other;
      p = cur->producer();
      break;
    }
  }
  // MatMul bias Add.
  std::optional<DqConstant> matmul_bias;
  if (Is(p, "Add")) {
    for (int side = 0; side < 2 && !matmul_bias.has_value(); ++side) {
      Value* other = p->input(1 - side);
      if (!SingleUse(other) || other->producer() == nullptr ||
          ir::UnitBaseOpOf(*other->producer()) != ir::UnitBaseOp::kMatMul) {
        continue;
      }
      matmul_bias = MatchDqConstant(p->input(side), DataType::kInt32);
      if (matmul_bias.has_value()) {
        m.chain.push_back(p);
        cur = other;
        p = cur->producer();
      }
    }
  }
  if (!IsBaseOp(p)) return std::nullopt;
  m.base = p;
  m.spec.base_op = *ir::UnitBaseOpOf(*p);
  m.chain.push_back(p);
  std::optional<DqActivation> x = MatchDqActivation(p->input(0));
  std::optional<DqConstant> w = MatchDqConstant(p->input(1), DataType::kInt8);
  if (!x.has_value() || !w.has_value()) return std::nullopt;
  m.x = *x;
  m.w = *w;
  const ir::Tensor& wt = *w->data->initializer();
  if (m.spec.base_op == ir::UnitBaseOp::kConv) {
    if (wt.rank() < 3) return std::nullopt;
  } else {
    const ir::AttributeMap& a = p->attrs();
    if (wt.rank() != 2 || a.GetInt("transA", 0).value_or(1) != 0 || a.GetFloat("alpha", 1.f).value_or(0) != 1.f ||
        a.GetFloat("beta", 1.f).value_or(0) != 1.f) {
      return std::nullopt;
    }
  }
  absl::StatusOr<int64_t> channel_axis_or = ir::WeightOutputChannelAxis(m.spec.base_op, p->attrs());
  if (!channel_axis_or.ok()) return std::nullopt;
  const int64_t channel_axis = *channel_axis_or;
  const int64_t channels = wt.dims()[channel_axis];
  const QuantParams& wq = w->params;
  for (int64_t zp : wq.zero_points) {
    if (zp < -128 || zp > 127) return std::nullopt;
  }
  if (wq.scales.size() > 1 && (static_cast<int64_t>(wq.scales.size()) != channels || wq.axis != channel_axis)) {
    return std::nullopt;
  }
  if (ir::BiasFollowsBase(m.spec.base_op)) {
    m.bias = matmul_bias;
  } else if (p->input(2) != nullptr) {
    m.bias = MatchDqConstant(p->input(2), DataType::kInt32);
    if (!m.bias.has_value()) return std::nullopt;
  }
  if (m.bias.has_value() && !BiasMatches(*m.bias, x->params.scales[0], wq, channels)) return std::nullopt;
  return m;
}

class Lowering {
 public:
  Lowering(ir::Graph* graph, const LoweringOptions& options) : graph_(*graph), options_(options) {}

  absl::StatusOr<LoweringStats> Run() {
    QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> order, graph_.TopologicalOrder());
    std::vector<Node*> quantize_nodes;  // rewrites remove only their own Q and upstream float ops
    for (Node* n : order) {
      if (Is(n, "QuantizeLinear")) quantize_nodes.push_back(n);
    }
    for (Node* n : quantize_nodes) {
      std::optional<Sink> sink = MatchQuantizeSink(n);
      if (sink.has_value()) QFUSE_RETURN_IF_ERROR(LowerAt(*sink));
    }
    for (Value* out : std::vector<Value*>(graph_.outputs())) {
      if (out->type().dtype != DataType::kFloat32 || !out->uses().empty() || out->producer() == nullptr) continue;
      Sink sink;
      sink.value = out;
      if (std::optional<UnitMatch> m = MatchUnit(out); m.has_value()) QFUSE_RETURN_IF_ERROR(LowerUnit(sink, *m));
    }
    // DequantizeLinear nodes nobody reads any more.
    for (bool changed = true; changed;) {
      changed = false;
      for (Node* n : graph_.nodes()) {
        if (Is(n, "DequantizeLinear") && n->output(0)->uses().empty() && !n->output(0)->is_graph_output()) {
          QFUSE_RETURN_IF_ERROR(graph_.RemoveNode(n));
          ++stats_.removed_nodes;
          changed = true;
        }
      }
    }
    graph_.RemoveUnusedConstants();
    QFUSE_RETURN_IF_ERROR(graph_.Verify());
    return stats_;
  }

 private:
  absl::Status LowerAt(const Sink& sink) {
    Node* p = sink.value->producer();
    if (std::optional<UnitMatch> m = MatchUnit(sink.value); m.has_value()) return LowerUnit(sink, *m);
    if (Is(p, "Add")) {
      std::optional<DqActivation> a = MatchDqActivation(p->input(0));
      std::optional<DqActivation> b = MatchDqActivation(p->input(1));
      if (!a.has_value() || !b.has_value() || !SameKnownShape(p->input(0), p->input(1))) return absl::OkStatus();
      ++stats_.adds;
      return Replace(sink, {p}, kQLinearAddOp, p->name(), {Quantized(*a), Quantized(*b)}, {});
    }
    if (Is(p, "Relu") || Is(p, "Clip")) {
      std::optional<DqActivation> x = MatchDqActivation(p->input(0));
      std::optional<ir::UnitSpec> clamp = ir::UnitActivationOf(*p);
      if (!x.has_value() || !clamp.has_value()) return absl::OkStatus();
      const ir::ClampRange bounds = clamp->ClampBounds();
      ir::AttributeMap attrs;
      attrs.Set("min", bounds.lo);
      attrs.Set("max", bounds.hi);
      ++stats_.clamps;
      return Replace(sink, {p}, kQLinearClampOp, p->name(), {Quantized(*x)}, attrs);
    }
    if (Is(p, "GlobalAveragePool") || Is(p, "AveragePool")) {
      std::optional<DqActivation> x = MatchDqActivation(p->input(0));
      if (!x.has_value()) return absl::OkStatus();
      if (Is(p, "AveragePool")) {
        const ir::AttributeMap& a = p->attrs();
        if (a.GetInt("ceil_mode", 0).value_or(1) != 0 || !a.Has("kernel_shape")) return absl::OkStatus();
        for (int64_t d : a.GetInts("dilations", {}).value_or(std::vector<int64_t>{2})) {
          if (d != 1) return absl::OkStatus();
        }
      }
      ++stats_.average_pools;
      return Replace(sink, {p}, Is(p, "AveragePool") ? kQLinearAveragePoolOp : kQLinearGlobalAveragePoolOp, p->name(),
                     {Quantized(*x)}, p->attrs());
    }
    if (Is(p, "Concat")) {
      std::vector<Value*> inputs;
      for (Value* in : p->inputs()) {
        std::optional<DqActivation> x = MatchDqActivation(in);
        if (!x.has_value()) return absl::OkStatus();
        inputs.push_back(Quantized(*x));
      }
      ++stats_.concats;
      return Replace(sink, {p}, kQLinearConcatOp, p->name(), inputs, p->attrs());
    }
    if (p != nullptr && ir::KeepsInputQuantization(*p)) return LowerPassThrough(sink);
    return absl::OkStatus();
  }

  // (d): the op runs on the int8 input directly; Q disappears.
  absl::Status LowerPassThrough(const Sink& sink) {
    Node* p = sink.value->producer();
    std::optional<DqActivation> x = MatchDqActivation(p->input(0));
    if (!x.has_value() || !(x->params == sink.params) || x->q->type().dtype != sink.qtype) return absl::OkStatus();
    for (size_t i = 1; i < p->outputs().size(); ++i) {
      if (p->output(i) != nullptr && (!p->output(i)->uses().empty() || p->output(i)->is_graph_output())) {
        return absl::OkStatus();
      }
    }
    QFUSE_RETURN_IF_ERROR(graph_.TruncateOutputs(p, 1));
    graph_.SetInput(p, 0, Quantized(*x));
    Value* out = p->output(0);
    Value* q_out = sink.q->output(0);
    const std::string name = q_out->name();
    out->mutable_type() = ir::TensorType{sink.qtype, q_out->type().shape.rank_known ? q_out->type().shape : out->type().shape,
                                         sink.params};
    graph_.ReplaceAllUsesWith(q_out, out);
    QFUSE_RETURN_IF_ERROR(graph_.RemoveNode(sink.q));
    QFUSE_RETURN_IF_ERROR(graph_.RenameValue(out, name));
    ++stats_.pass_through;
    ++stats_.removed_nodes;
    return absl::OkStatus();
  }

  absl::Status LowerUnit(const Sink& sink, const UnitMatch& m) {
    ir::AttributeMap attrs = m.base->attrs();
    ir::WriteUnitSpec(m.spec, &attrs);
    m.w.data->mutable_type().quant = m.w.params;
    std::vector<Value*> inputs = {Quantized(m.x), m.w.data};
    if (m.bias.has_value() || m.residual.has_value()) inputs.push_back(m.bias.has_value() ? m.bias->data : nullptr);
    if (m.bias.has_value()) m.bias->data->mutable_type().quant = m.bias->params;
    if (m.residual.has_value()) inputs.push_back(Quantized(*m.residual));
    ++stats_.units;
    return Replace(sink, m.chain, kQLinearUnitOp, m.base->name(), inputs, attrs);
  }

  // The int8 value of a DQ activation, with its QuantParams written into its type.
  Value* Quantized(const DqActivation& a) {
    a.q->mutable_type().quant = a.params;
    return a.q;
  }

  // Adds the integer node reading `inputs`, moves the sink's uses and name to its output
  // and removes the sink's QuantizeLinear and the float ops `chain` (last first).
  absl::Status Replace(const Sink& sink, const std::vector<Node*>& chain, const std::string& op_type,
                       std::string node_name, const std::vector<Value*>& inputs, ir::AttributeMap attrs) {
    attrs.Set(kRequantizeModeAttr, std::string(RequantizeModeName(options_.mode)));
    Value* old_out = sink.q != nullptr ? sink.q->output(0) : sink.value;
    const std::string name = old_out->name();
    ir::TensorType type = sink.value->type();
    if (sink.q != nullptr) {
      type.dtype = sink.qtype;
      type.quant = sink.params;
    }
    QFUSE_ASSIGN_OR_RETURN(Node * n, graph_.AddNode(op_type, node_name, inputs, {graph_.UniqueValueName(name + "_int8")},
                                                    std::move(attrs), ir::kQfuseDomain));
    n->output(0)->mutable_type() = type;
    graph_.ReplaceAllUsesWith(old_out, n->output(0));
    if (sink.q != nullptr) {
      QFUSE_RETURN_IF_ERROR(graph_.RemoveNode(sink.q));
      ++stats_.removed_nodes;
    }
    for (Node* c : chain) {
      QFUSE_RETURN_IF_ERROR(graph_.RemoveNode(c));
      ++stats_.removed_nodes;
    }
    QFUSE_RETURN_IF_ERROR(graph_.RenameNode(n, node_name));  // free again once the chain is gone
    return graph_.RenameValue(n->output(0), name);
  }

  ir::Graph& graph_;
  const LoweringOptions& options_;
  LoweringStats stats_;
};

}  // namespace

bool HasQdqNodes(const ir::Graph& graph) {
  for (const Node* n : graph.nodes()) {
    if (Is(n, "QuantizeLinear") || Is(n, "DequantizeLinear")) return true;
  }
  return false;
}

absl::StatusOr<LoweringStats> LowerQdqToInteger(ir::Graph* graph, const LoweringOptions& options) {
  Lowering lowering(graph, options);
  return lowering.Run();
}

}  // namespace qfuse::runtime::int8
