#include "runtime/int8/qdq_lowering.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "ir/int8_forms.h"
#include "ir/rewrite/pattern.h"
#include "ir/unit_activation_match.h"
#include "ir/unit_chain_match.h"
#include "runtime/int8/activation_lookup.h"
#include "runtime/int8/activation_matmul.h"
#include "runtime/int8/activation_softmax.h"
#include "runtime/int8/channel_map_fusion.h"
#include "runtime/int8/elementwise_lookup.h"
#include "runtime/int8/gelu_fusion.h"
#include "runtime/int8/group_replacer.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/layer_norm_fusion.h"
#include "runtime/int8/qdq_operands.h"
#include "runtime/int8/unit_requantization.h"
#include "runtime/int8/value_params.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::DataType;
using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::QuantParams;
using ir::Value;

bool Is(const Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

std::vector<std::string> Ops(absl::Span<const char* const> ops) { return {ops.begin(), ops.end()}; }

// A single float op whose output the sink quantizes, the group of patterns (b)-(f).
std::optional<Group> SingleOpGroup(const Node& op) {
  if (op.output(0) == nullptr) return std::nullopt;
  std::optional<Sink> sink = MatchQuantizeSink(*op.output(0));
  if (!sink.has_value()) return std::nullopt;
  return Group{{op.id()}, *sink, op.id()};
}

// (a) QLinearUnit.
struct UnitMatch {
  Group group;
  DqOperand x;
  DqOperand w;
  std::optional<DqOperand> bias;
  std::optional<DqOperand> residual;
  ir::UnitSpec spec;
};

// Checks the bias scale is s_x * s_w[c] and its zero point 0.
bool BiasMatches(const Graph& graph, const DqOperand& b, float x_scale, const QuantParams& w, int64_t channels) {
  const ir::Tensor& data = *DequantizeInput(graph, b)->initializer();
  if (data.num_elements() != channels || data.rank() != 1) return false;
  for (int64_t c = 0; c < channels; ++c) {
    const size_t bi = b.params.scales.size() == 1 ? 0 : c, wi = w.scales.size() == 1 ? 0 : c;
    if (bi >= b.params.scales.size() || wi >= w.scales.size() || b.params.zero_points[bi] != 0) return false;
    const double expected = static_cast<double>(x_scale) * w.scales[wi];
    if (std::abs(b.params.scales[bi] - expected) > 1e-5 * expected) return false;
  }
  return true;
}

class UnitPattern : public ir::rewrite::Pattern<UnitMatch> {
 public:
  explicit UnitPattern(const Replacer& replacer) : replacer_(replacer) {
    // The unit chain as unit formation matches it, with quantized operands: an INT32 bias
    // and an int8 residual behind DequantizeLinear, any activation.
    chain_options_.matmul_bias = [](const Node&, const Value& bias) {
      return MatchDqConstant(&bias, DataType::kInt32).has_value();
    };
    chain_options_.residual = [](const Value& residual, const Value&, const Value&) {
      return MatchDqActivation(&residual).has_value();
    };
  }

 protected:
  std::optional<UnitMatch> Match(const Graph& graph, const Node& anchor) const override {
    std::optional<ir::UnitChain> chain = ir::MatchUnitChain(anchor, chain_options_);
    if (!chain.has_value()) return std::nullopt;
    const Value* y = ir::UnitChainOutput(graph, *chain);
    std::optional<Sink> sink = MatchQuantizeSink(*y);
    if (!sink.has_value()) sink = MatchOutputSink(*y);
    if (!sink.has_value()) return std::nullopt;
    std::vector<NodeId> nodes = chain->Nodes();
    UnitMatch m{Group{{nodes.rbegin(), nodes.rend()}, *sink, anchor.id()}, {}, {}, {}, {}, chain->spec};
    std::optional<DqOperand> x = MatchDqActivation(anchor.input(0));
    std::optional<DqOperand> w = MatchDqConstant(anchor.input(1), DataType::kInt8);
    if (!x.has_value() || !w.has_value()) return std::nullopt;
    m.x = *x;
    m.w = *w;
    const ir::Tensor& wt = *DequantizeInput(graph, *w)->initializer();
    if (!CheckIntegerUnitForm(m.spec.base_op, anchor.attrs(), wt.rank()).ok()) return std::nullopt;
    absl::StatusOr<int64_t> channel_axis = ir::WeightOutputChannelAxis(m.spec.base_op, anchor.attrs());
    if (!channel_axis.ok()) return std::nullopt;
    const int64_t channels = wt.dims()[*channel_axis];
    const QuantParams& wq = w->params;
    for (int64_t zp : wq.zero_points) {
      if (zp < -128 || zp > 127) return std::nullopt;
    }
    if (wq.scales.size() > 1 && (static_cast<int64_t>(wq.scales.size()) != channels || wq.axis != *channel_axis)) {
      return std::nullopt;
    }
    if (chain->bias_add != ir::kNoNode) {
      m.bias = MatchDqConstant(graph.FindNode(chain->bias_add)->input(chain->bias_index), DataType::kInt32);
    } else if (!ir::BiasFollowsBase(m.spec.base_op) && anchor.input(2) != nullptr) {
      m.bias = MatchDqConstant(anchor.input(2), DataType::kInt32);
      if (!m.bias.has_value()) return std::nullopt;
    }
    if (m.bias.has_value() && !BiasMatches(graph, *m.bias, x->params.scales[0], wq, channels)) return std::nullopt;
    if (chain->residual_add != ir::kNoNode) {
      m.residual = MatchDqActivation(graph.FindNode(chain->residual_add)->input(chain->residual_index));
      // The kernel adds the residual elementwise: it must have the unit output's shape.
      if (!ir::ResidualShapeFits(*DequantizeInput(graph, *m.residual), *y)) return std::nullopt;
    }
    return m;
  }

  absl::Status Rewrite(Graph* graph, const UnitMatch& m) const override {
    ir::AttributeMap attrs = graph->FindNode(m.group.name_from)->attrs();
    ir::WriteUnitSpec(m.spec, &attrs);
    if (m.spec.base_op == ir::UnitBaseOp::kMatMul && replacer_.options().mode == numerics::RequantizeMode::kOnnx &&
        (m.bias.has_value() || m.residual.has_value())) {
      attrs.Set(kMatMulToFloatAttr, int64_t{1});
      if (m.bias.has_value()) attrs.Set(kBiasScalesAttr, m.bias->params.scales);
    }
    std::vector<Value*> inputs = {QuantizedInput(graph, m.x), QuantizedInput(graph, m.w)};
    if (m.bias.has_value() || m.residual.has_value()) {
      inputs.push_back(m.bias.has_value() ? QuantizedInput(graph, *m.bias) : nullptr);
    }
    if (m.residual.has_value()) inputs.push_back(QuantizedInput(graph, *m.residual));
    return replacer_.Replace(graph, m.group, kQLinearUnitOp, inputs, std::move(attrs));
  }

 private:
  const Replacer& replacer_;
  ir::UnitChainOptions chain_options_;
};

// (a') The integer-head form of a Conv unit (quant/integer_heads.h):
//   ConvInteger(x, w, zp_x, zp_w) -> [Add(int32 bias [M, 1, ...])] -> DequantizeLinear(d_a)
//   -> [Add residual] -> [activation] -> sink
// => QLinearUnit with w - 128 re-centred to INT8 (uint8 weights), its scales d_a, and
// kDequantizedEpilogueAttr: the output stage computes what the form computes.
struct IntegerHeadMatch {
  Group group;
  NodeId conv = ir::kNoNode;
  NodeId bias_add = ir::kNoNode;  // or kNoNode
  int bias_index = 0;
  DqOperand acc;                  // the DequantizeLinear of the int32 accumulator
  std::optional<DqOperand> residual;
  ir::UnitSpec spec;
};

// The one element of a constant, or nullopt.
std::optional<int64_t> ScalarConstant(const Value* v, DataType dtype) {
  if (v == nullptr || !v->is_constant() || v->initializer()->dtype() != dtype || v->initializer()->num_elements() != 1) {
    return std::nullopt;
  }
  const ir::Tensor& t = *v->initializer();
  return dtype == DataType::kUint8 ? int64_t{t.data<uint8_t>()[0]} : int64_t{t.data<int8_t>()[0]};
}

class IntegerHeadPattern : public ir::rewrite::Pattern<IntegerHeadMatch> {
 public:
  explicit IntegerHeadPattern(const Replacer& replacer) : replacer_(replacer) {
    chain_options_.residual = [](const Value& residual, const Value&, const Value&) {
      return MatchDqActivation(&residual).has_value();
    };
  }

 protected:
  std::optional<IntegerHeadMatch> Match(const Graph& graph, const Node& conv) const override {
    const Value* x = conv.input(0);
    const Value* w = conv.input(1);
    if (x == nullptr || x->is_constant() || w == nullptr || !w->is_constant() || conv.output(0) == nullptr) {
      return std::nullopt;
    }
    const DataType xt = x->type().dtype, wt = w->initializer()->dtype();
    if ((xt != DataType::kUint8 && xt != DataType::kInt8) || (wt != DataType::kUint8 && wt != DataType::kInt8)) {
      return std::nullopt;
    }
    const std::optional<int64_t> x_zp = conv.input(2) == nullptr ? 0 : ScalarConstant(conv.input(2), xt);
    const std::optional<int64_t> w_zp = conv.input(3) == nullptr ? 0 : ScalarConstant(conv.input(3), wt);
    if (!x_zp.has_value() || !w_zp.has_value()) return std::nullopt;
    if (x->type().quant.has_value() &&
        (x->type().quant->zero_points.size() != 1 || x->type().quant->zero_points[0] != *x_zp)) {
      return std::nullopt;
    }
    const ir::Tensor& wd = *w->initializer();
    if (!CheckIntegerUnitForm(ir::UnitBaseOp::kConv, conv.attrs(), wd.rank()).ok()) return std::nullopt;
    const int64_t channels = wd.dims()[0];
    IntegerHeadMatch m;
    m.conv = conv.id();
    const Value* current = conv.output(0);
    if (current->uses().size() != 1 || current->is_graph_output()) return std::nullopt;
    const Node* next = current->uses()[0].node;
    if (Is(next, "Add") && next->inputs().size() == 2) {
      const int bias_index = next->input(0) == current ? 1 : 0;
      const Value* bias = next->input(bias_index);
      // [M, 1, ..., 1]: one value per output channel, broadcast over the spatial dims.
      if (bias == nullptr || !bias->is_constant() || bias->initializer()->dtype() != DataType::kInt32 ||
          bias->initializer()->rank() != wd.rank() - 1 || bias->initializer()->dims()[0] != channels ||
          bias->initializer()->num_elements() != channels) {
        return std::nullopt;
      }
      m.bias_add = next->id();
      m.bias_index = bias_index;
      current = next->output(0);
      if (current->uses().size() != 1 || current->is_graph_output()) return std::nullopt;
      next = current->uses()[0].node;
    }
    if (!Is(next, "DequantizeLinear") || next->output(0) == nullptr) return std::nullopt;
    std::optional<DqOperand> acc = MatchDqAccumulator(next->output(0));
    if (!acc.has_value()) return std::nullopt;
    if (acc->params.scales.size() > 1 &&
        (static_cast<int64_t>(acc->params.scales.size()) != channels || acc->params.axis != 1)) {
      return std::nullopt;
    }
    m.acc = *acc;
    std::optional<ir::UnitChain> chain = ir::MatchUnitChainAfter(*next, ir::UnitBaseOp::kConv, chain_options_);
    if (!chain.has_value()) return std::nullopt;
    const Value* y = ir::UnitChainOutput(graph, *chain);
    std::optional<Sink> sink = MatchQuantizeSink(*y);
    if (!sink.has_value()) sink = MatchOutputSink(*y);
    if (!sink.has_value()) return std::nullopt;
    std::vector<NodeId> nodes = chain->Nodes();  // the DequantizeLinear first
    nodes.insert(nodes.begin(), m.bias_add);
    if (m.bias_add == ir::kNoNode) nodes.erase(nodes.begin());
    nodes.insert(nodes.begin(), conv.id());
    m.group = Group{{nodes.rbegin(), nodes.rend()}, *sink, conv.id()};
    m.spec = chain->spec;
    if (chain->residual_add != ir::kNoNode) {
      m.residual = MatchDqActivation(graph.FindNode(chain->residual_add)->input(chain->residual_index));
      if (!ir::ResidualShapeFits(*DequantizeInput(graph, *m.residual), *y)) return std::nullopt;
    }
    return m;
  }

  absl::Status Rewrite(Graph* graph, const IntegerHeadMatch& m) const override {
    Node* conv = graph->FindNode(m.conv);
    Value* x = conv->input(0);
    const ir::Tensor& w = *conv->input(1)->initializer();
    const int64_t channels = w.dims()[0];
    const bool w_unsigned = w.dtype() == DataType::kUint8;
    const int64_t x_zp = conv->input(2) == nullptr ? 0 : *ScalarConstant(conv->input(2), x->type().dtype);
    int64_t w_zp = conv->input(3) == nullptr ? 0 : *ScalarConstant(conv->input(3), w.dtype());
    // uint8 weights re-centred by 128 (w - zp unchanged), so the kernels read INT8.
    ir::Tensor w8(DataType::kInt8, w.dims());
    for (int64_t i = 0; i < w.num_elements(); ++i) {
      w8.data<int8_t>()[i] = static_cast<int8_t>(w_unsigned ? int32_t{w.data<uint8_t>()[i]} - 128 : w.data<int8_t>()[i]);
    }
    if (w_unsigned) w_zp -= 128;
    QuantParams wq;
    wq.scales = m.acc.params.scales;
    if (wq.scales.size() > 1) wq.axis = 0;
    wq.zero_points.assign(wq.scales.size(), w_zp);
    const std::string base = conv->name();
    QFUSE_ASSIGN_OR_RETURN(Value * wv, graph->AddConstant(graph->UniqueValueName(base + "_w_int8"), std::move(w8)));
    wv->mutable_type().quant = wq;
    Value* bias = nullptr;
    if (m.bias_add != ir::kNoNode) {
      ir::Tensor b = *graph->FindNode(m.bias_add)->input(m.bias_index)->initializer();
      QFUSE_RETURN_IF_ERROR(b.SetDims({channels}));
      QFUSE_ASSIGN_OR_RETURN(bias, graph->AddConstant(graph->UniqueValueName(base + "_bias_int32"), std::move(b)));
    }
    // x's scale is in d_a and not read; its zero point is the ConvInteger's (a DequantizeLinear
    // reader of x, when there is one, gives the params it must agree with).
    if (!x->type().quant.has_value()) {
      QuantParams xq{{1.f}, {x_zp}, std::nullopt};
      for (const ir::Use& use : x->uses()) {
        if (!Is(use.node, "DequantizeLinear")) continue;
        if (std::optional<DqOperand> d = MatchDqActivation(use.node->output(0)); d.has_value()) xq = d->params;
      }
      x->mutable_type().quant = xq;
    }
    ir::AttributeMap attrs = conv->attrs();
    ir::WriteUnitSpec(m.spec, &attrs);
    attrs.Set(kDequantizedEpilogueAttr, int64_t{1});
    std::vector<Value*> inputs = {x, wv};
    if (bias != nullptr || m.residual.has_value()) inputs.push_back(bias);
    if (m.residual.has_value()) inputs.push_back(QuantizedInput(graph, *m.residual));
    return replacer_.Replace(graph, m.group, kQLinearUnitOp, inputs, std::move(attrs));
  }

 private:
  const Replacer& replacer_;
  ir::UnitChainOptions chain_options_;
};

// The integer op of a single-op group: (b), (c), (e), (f).
struct IntegerOp {
  const char* op_type;
  std::vector<DqOperand> inputs;  // DequantizeLinear activations
  ir::AttributeMap attrs;         // the integer op's
};

// (b) Add(DQ(a), DQ(b)), any shapes => QLinearAdd.
std::optional<IntegerOp> MatchAdd(const Node& add) {
  std::optional<DqOperand> a = MatchDqActivation(add.input(0));
  std::optional<DqOperand> b = MatchDqActivation(add.input(1));
  if (!a.has_value() || !b.has_value()) return std::nullopt;
  // Any shapes: the kernel broadcasts (numpy rules) and refuses shapes that do not.
  return IntegerOp{kQLinearAddOp, {*a, *b}, {}};
}

// (b') Mul(DQ(a), DQ(b)), any shapes => QLinearMul (int8_ops.h: a Mul the converter left
// between int8 neighbours).
std::optional<IntegerOp> MatchMul(const Node& mul) {
  std::optional<DqOperand> a = MatchDqActivation(mul.input(0));
  std::optional<DqOperand> b = MatchDqActivation(mul.input(1));
  if (!a.has_value() || !b.has_value()) return std::nullopt;
  return IntegerOp{kQLinearMulOp, {*a, *b}, {}};
}

// (c) Relu | Clip(DQ(x)) => QLinearClamp with the activation's clamp bounds.
std::optional<IntegerOp> MatchClamp(const Node& op) {
  std::optional<DqOperand> x = MatchDqActivation(op.input(0));
  std::optional<ir::UnitSpec> clamp = ir::UnitActivationOf(op);
  if (!x.has_value() || !clamp.has_value() || !ir::IsClampActivation(clamp->activation)) return std::nullopt;
  const ir::ClampRange bounds = clamp->ClampBounds();
  IntegerOp m{kQLinearClampOp, {*x}, {}};
  m.attrs.Set("min", bounds.lo);
  m.attrs.Set("max", bounds.hi);
  return m;
}

// (e) AveragePool | GlobalAveragePool(DQ(x)) => QLinear[Global]AveragePool.
std::optional<IntegerOp> MatchAveragePool(const Node& pool) {
  std::optional<DqOperand> x = MatchDqActivation(pool.input(0));
  if (!x.has_value()) return std::nullopt;
  if (Is(&pool, "GlobalAveragePool")) return IntegerOp{kQLinearGlobalAveragePoolOp, {*x}, pool.attrs()};
  const ir::AttributeMap& a = pool.attrs();
  if (a.GetInt("ceil_mode", 0).value_or(1) != 0 || !a.Has("kernel_shape")) return std::nullopt;
  for (int64_t d : a.GetInts("dilations", {}).value_or(std::vector<int64_t>{2})) {
    if (d != 1) return std::nullopt;
  }
  return IntegerOp{kQLinearAveragePoolOp, {*x}, pool.attrs()};
}

// (f) Concat(DQ(x_0), ..., DQ(x_n)) => QLinearConcat.
std::optional<IntegerOp> MatchConcat(const Node& concat) {
  IntegerOp m{kQLinearConcatOp, {}, concat.attrs()};
  for (const Value* in : concat.inputs()) {
    std::optional<DqOperand> x = MatchDqActivation(in);
    if (!x.has_value()) return std::nullopt;
    m.inputs.push_back(*x);
  }
  return m;
}

struct OpMatch {
  Group group;
  IntegerOp op;
};

// A float op whose output one QuantizeLinear reads, becoming the integer op its matcher
// (one of the above) finds.
class SingleOpPattern : public ir::rewrite::Pattern<OpMatch> {
 public:
  using Matcher = std::optional<IntegerOp> (*)(const Node& op);
  SingleOpPattern(const Replacer& replacer, Matcher matcher) : replacer_(replacer), matcher_(matcher) {}

 protected:
  std::optional<OpMatch> Match(const Graph& graph, const Node& anchor) const override {
    std::optional<Group> group = SingleOpGroup(anchor);
    if (!group.has_value()) return std::nullopt;
    std::optional<IntegerOp> op = matcher_(anchor);
    if (!op.has_value()) return std::nullopt;
    return OpMatch{*group, *std::move(op)};
  }

  absl::Status Rewrite(Graph* graph, const OpMatch& m) const override {
    std::vector<Value*> inputs;
    for (const DqOperand& x : m.op.inputs) inputs.push_back(QuantizedInput(graph, x));
    return replacer_.Replace(graph, m.group, m.op.op_type, inputs, m.op.attrs);
  }

 private:
  const Replacer& replacer_;
  Matcher matcher_;
};

// (d) Data movement (DQ(x)) -> Q with Q's params equal to x's: the op itself runs on the
// int8 input and the QuantizeLinear goes.
struct PassThroughMatch {
  NodeId op = ir::kNoNode;
  DqOperand x;
  Sink sink;
};

class PassThroughPattern : public ir::rewrite::Pattern<PassThroughMatch> {
 public:
  explicit PassThroughPattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<PassThroughMatch> Match(const Graph& graph, const Node& op) const override {
    if (!ir::KeepsInputQuantization(op)) return std::nullopt;  // Resize other than nearest
    std::optional<Group> group = SingleOpGroup(op);
    std::optional<DqOperand> x = MatchDqActivation(op.input(0));
    if (!group.has_value() || !x.has_value() || !(x->params == group->sink.params) ||
        DequantizeInput(graph, *x)->type().dtype != group->sink.qtype) {
      return std::nullopt;
    }
    for (size_t i = 1; i < op.outputs().size(); ++i) {
      if (op.output(i) != nullptr && (!op.output(i)->uses().empty() || op.output(i)->is_graph_output())) {
        return std::nullopt;
      }
    }
    return PassThroughMatch{op.id(), *x, group->sink};
  }

  absl::Status Rewrite(Graph* graph, const PassThroughMatch& m) const override {
    Node* op = graph->FindNode(m.op);
    Node* q = graph->FindNode(m.sink.q);
    QFUSE_RETURN_IF_ERROR(graph->TruncateOutputs(op, 1));
    graph->SetInput(op, 0, QuantizedInput(graph, m.x));
    Value* out = op->output(0);
    Value* q_out = q->output(0);
    const std::string name = q_out->name();
    out->mutable_type() =
        ir::TensorType{m.sink.qtype, q_out->type().shape.rank_known ? q_out->type().shape : out->type().shape,
                       m.sink.params};
    graph->ReplaceAllUsesWith(q_out, out);
    QFUSE_RETURN_IF_ERROR(replacer_.Remove(graph, q));
    return graph->RenameValue(out, name);
  }

 private:
  const Replacer& replacer_;
};

// A QLinearClamp whose input is the int8 output of a QLinearUnit with a clamp activation, a
// QLinearAdd or a QLinearMul, with no other reader: that node takes the clamp's
// requantization as a byte map after its own (int8_ops.h's kFolded* attributes) and writes
// the clamp's output; the clamp and the intermediate tensor are gone. Same bytes, one pass
// over the tensor less. Returns how many it folded.
absl::StatusOr<int64_t> FoldClamps(Graph* graph, const Replacer& replacer) {
  int64_t folded = 0;
  std::vector<Node*> clamps;
  for (Node* n : graph->nodes()) {
    if (n->domain() == ir::kQfuseDomain && n->op_type() == kQLinearClampOp) clamps.push_back(n);
  }
  for (Node* clamp : clamps) {
    Value* stage_out = clamp->input(0);
    Node* producer = stage_out == nullptr ? nullptr : stage_out->producer();
    if (producer == nullptr || producer->domain() != ir::kQfuseDomain ||
        (producer->op_type() != kQLinearUnitOp && producer->op_type() != kQLinearAddOp &&
         producer->op_type() != kQLinearMulOp) ||
        producer->attrs().Has(kFoldedStageTypeAttr) || stage_out->uses().size() != 1 || stage_out->is_graph_output()) {
      continue;
    }
    if (producer->op_type() == kQLinearUnitOp) {
      absl::StatusOr<ir::UnitSpec> spec = ir::ReadUnitSpec(*producer);
      if (!spec.ok() || !ir::IsClampActivation(spec->activation) || producer->attrs().Has(kMatMulToFloatAttr)) continue;
    }
    absl::StatusOr<ActivationQuant> stage = ReadActivationQuant(stage_out, "x");
    absl::StatusOr<ActivationQuant> y = ReadActivationQuant(clamp->output(0), "y");
    if (!stage.ok() || !y.ok()) continue;
    QFUSE_ASSIGN_OR_RETURN(const float lo, clamp->attrs().GetFloat("min", std::numeric_limits<float>::lowest()));
    QFUSE_ASSIGN_OR_RETURN(const float hi, clamp->attrs().GetFloat("max", std::numeric_limits<float>::max()));
    ir::AttributeMap& attrs = producer->mutable_attrs();
    attrs.Set(kFoldedStageTypeAttr, static_cast<int64_t>(stage->type));
    attrs.Set(kFoldedStageScaleAttr, stage->scale);
    attrs.Set(kFoldedStageZeroPointAttr, static_cast<int64_t>(stage->zero_point));
    attrs.Set(kFoldedClampMinAttr, lo);
    attrs.Set(kFoldedClampMaxAttr, hi);
    Value* clamp_out = clamp->output(0);
    const std::string name = clamp_out->name();
    stage_out->mutable_type() = clamp_out->type();
    graph->ReplaceAllUsesWith(clamp_out, stage_out);
    QFUSE_RETURN_IF_ERROR(replacer.Remove(graph, clamp));
    QFUSE_RETURN_IF_ERROR(graph->RenameValue(stage_out, name));
    ++folded;
  }
  return folded;
}

// DequantizeLinear nodes nobody reads any more.
absl::Status RemoveUnreadDequantize(Graph* graph, const Replacer& replacer) {
  for (bool changed = true; changed;) {
    changed = false;
    for (Node* n : graph->nodes()) {
      if (Is(n, "DequantizeLinear") && n->output(0)->uses().empty() && !n->output(0)->is_graph_output()) {
        QFUSE_RETURN_IF_ERROR(replacer.Remove(graph, n));
        changed = true;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool HasQdqNodes(const ir::Graph& graph) {
  for (const Node* n : graph.nodes()) {
    if (Is(n, "QuantizeLinear") || Is(n, "DequantizeLinear")) return true;
  }
  return false;
}

absl::StatusOr<LoweringStats> LowerQdqToInteger(ir::Graph* graph, const LoweringOptions& options) {
  LoweringStats stats;
  const Replacer replacer(options, &stats);
  const UnitPattern unit(replacer);
  const IntegerHeadPattern integer_head(replacer);
  const SingleOpPattern add(replacer, MatchAdd);
  const SingleOpPattern mul(replacer, MatchMul);
  const SingleOpPattern clamp(replacer, MatchClamp);
  const PassThroughPattern pass_through(replacer);
  const SingleOpPattern average_pool(replacer, MatchAveragePool);
  const SingleOpPattern concat(replacer, MatchConcat);
  const ActivationMatMulPattern activation_matmul(replacer);
  const LayerNormPattern layer_norm(replacer);
  const SimplifiedLayerNormPattern simplified_layer_norm(replacer);
  const ActivationSoftmaxPattern activation_softmax(replacer);
  const GeluPattern gelu(replacer);
  const ActivationLookupPattern activation_lookup(replacer);
  const ChannelMapPattern channel_map(replacer);
  const ElementwiseLookupPattern elementwise_lookup(replacer);
  const PoolBeforeDequantizePattern pool_before_dequantize;
  // The patterns by anchor op type (ops with an int8 form, ir/int8_forms.h; ConvTranspose
  // has no integer unit kernel).
  ir::rewrite::RuleTable table;
  table.Add({ir::UnitBaseOpName(ir::UnitBaseOp::kConv), ir::UnitBaseOpName(ir::UnitBaseOp::kGemm),
             ir::UnitBaseOpName(ir::UnitBaseOp::kMatMul)},
            &unit);
  table.Add({"ConvInteger"}, &integer_head);
  table.Add({"Add"}, &add);
  table.Add({"Mul"}, &mul);
  table.Add({"Mul"}, &channel_map);
  table.Add(Ops(ir::kClampOps), &clamp);
  table.Add(Ops(ir::kKeepsInputQuantizationOps), &pass_through);
  table.Add({"MaxPool"}, &pool_before_dequantize);
  table.Add(Ops(ir::kAveragePoolOps), &average_pool);
  table.Add(Ops(ir::kConcatOps), &concat);
  if (options.mode == numerics::RequantizeMode::kOnnx) {
    table.Add({"MatMul"}, &activation_matmul);
    table.Add({"Softmax"}, &activation_softmax);
  }
  table.Add({"ReduceMean"}, &layer_norm);
  table.Add({"Pow"}, &simplified_layer_norm);  // where the full LayerNorm did not take the chain
  table.Add({"Erf"}, &gelu);
  table.Add({"HardSwish", "HardSigmoid", "Sigmoid", "LeakyRelu"}, &activation_lookup);
  // Last: a chain no pattern above took.
  table.Add(ElementwiseLookupPattern::ChainOps(), &elementwise_lookup);
  QFUSE_ASSIGN_OR_RETURN(auto rewrites, ir::rewrite::RewriteOnce(table, graph));
  stats.units = rewrites[&unit] + rewrites[&integer_head];
  stats.adds = rewrites[&add];
  stats.muls = rewrites[&mul];
  stats.clamps = rewrites[&clamp];
  stats.pass_through = rewrites[&pass_through];
  stats.average_pools = rewrites[&average_pool];
  stats.concats = rewrites[&concat];
  stats.activation_matmuls = rewrites[&activation_matmul];
  stats.layer_norms = rewrites[&layer_norm] + rewrites[&simplified_layer_norm];
  stats.activation_softmaxes = rewrites[&activation_softmax];
  stats.gelus = rewrites[&gelu];
  stats.activation_lookups = rewrites[&activation_lookup];
  stats.channel_maps = rewrites[&channel_map];
  stats.elementwise_lookups = rewrites[&elementwise_lookup];
  QFUSE_RETURN_IF_ERROR(RemoveUnreadDequantize(graph, replacer));
  if (options.fold_clamps) {
    QFUSE_ASSIGN_OR_RETURN(stats.folded_clamps, FoldClamps(graph, replacer));
  }
  graph->RemoveUnusedConstants();
  QFUSE_RETURN_IF_ERROR(graph->Verify());
  return stats;
}

}  // namespace qfuse::runtime::int8
