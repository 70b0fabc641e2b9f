#include "runtime/int8/channel_map_fusion.h"

#include <utility>

#include "ir/fused_unit.h"
#include "ir/unit_activation_match.h"
#include "runtime/int8/float_chain.h"
#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {
namespace {

// A FLOAT constant of one value or of `channels` values along axis 1 of a 4-D tensor.
bool IsChannelConstant(const ir::Value* v, int64_t channels) {
  if (v == nullptr || !v->is_constant() || v->initializer()->dtype() != ir::DataType::kFloat32) return false;
  const std::vector<int64_t>& d = v->initializer()->dims();
  const int64_t n = v->initializer()->num_elements();
  if (n == 1) return d.size() <= 4;
  const bool chw = d.size() == 3 && d[1] == 1 && d[2] == 1;
  const bool nchw = d.size() == 4 && d[0] == 1 && d[2] == 1 && d[3] == 1;
  return (chw || nchw) && n == channels;
}

// Channels of a 4-D value, or 0 when its rank or channel count is not known.
int64_t Channels(const ir::Value* v) {
  const ir::Shape& s = v->type().shape;
  if (!s.rank_known || s.rank() != 4 || !s.dims[1].is_known()) return 0;
  return s.dims[1].value;
}

}  // namespace

std::optional<ChannelMapMatch> ChannelMapPattern::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  if (!IsOnnxOp(&anchor, "Mul") || anchor.inputs().size() != 2 || anchor.output(0) == nullptr) return std::nullopt;
  ChannelMapMatch m;
  m.mul = anchor.id();
  // The data operand: DQ(x), or Concat(DQ(x_0), ...) along axis 1 read only by this Mul.
  const ir::Value* data = anchor.input(0)->is_constant() ? anchor.input(1) : anchor.input(0);
  const ir::Value* scale = OtherInput(anchor, data);
  const int64_t channels = Channels(data);
  if (channels == 0 || !IsChannelConstant(scale, channels) || data->is_graph_output()) return std::nullopt;
  const ir::Node* concat = data->producer();
  std::vector<ir::NodeId> float_ops;
  if (std::optional<DqOperand> x = MatchDqActivation(data); x.has_value()) {
    if (data->uses().size() != 1) return std::nullopt;
    m.inputs.push_back(*x);
    m.float_inputs.push_back("");
  } else if (IsOnnxOp(concat, "Concat") && SoleBinaryReader(data, "Mul") == &anchor) {
    const int64_t axis = concat->attrs().GetInt("axis", 0).value_or(0);
    if (axis != 1 && axis != -3) return std::nullopt;
    bool quantized = false;
    for (const ir::Value* in : concat->inputs()) {
      if (in == nullptr || Channels(in) == 0) return std::nullopt;
      std::optional<DqOperand> x = MatchDqActivation(in);
      if (!x.has_value() && in->type().dtype != ir::DataType::kFloat32) return std::nullopt;
      quantized = quantized || x.has_value();
      m.inputs.push_back(x);
      m.float_inputs.push_back(x.has_value() ? "" : in->name());
    }
    if (!quantized) return std::nullopt;
    // One int8 value behind two DequantizeLinears with other parameters would take one set.
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (m.inputs[i].has_value() && m.inputs[j].has_value() &&
            DequantizeInput(graph, *m.inputs[i]) == DequantizeInput(graph, *m.inputs[j]) &&
            !(m.inputs[i]->params == m.inputs[j]->params)) {
          return std::nullopt;
        }
      }
    }
    float_ops.push_back(concat->id());
  } else {
    return std::nullopt;
  }
  float_ops.push_back(anchor.id());
  // Mul -> Add(shift) -> [Relu | Clip] -> Q.
  const ir::Node* add = SoleBinaryReader(anchor.output(0), "Add");
  if (add == nullptr || add->output(0) == nullptr) return std::nullopt;
  const ir::Value* shift = OtherInput(*add, anchor.output(0));
  if (!IsChannelConstant(shift, channels)) return std::nullopt;
  float_ops.push_back(add->id());
  const ir::Value* y = add->output(0);
  const ir::Node* act = SoleReader(y, "Relu", 0);
  if (act == nullptr) act = SoleReader(y, "Clip", 0);
  if (act != nullptr && act->output(0) != nullptr) {
    std::optional<ir::UnitSpec> clamp = ir::UnitActivationOf(*act);
    if (clamp.has_value() && ir::IsClampActivation(clamp->activation) && act->input(0) == y) {
      m.clamp = *clamp;
      float_ops.push_back(act->id());
      y = act->output(0);
    }
  }
  std::optional<Sink> sink = MatchQuantizeSink(*y);
  if (!sink.has_value()) return std::nullopt;
  m.sink = *sink;
  m.nodes.assign(float_ops.rbegin(), float_ops.rend());
  m.scale = scale->name();
  m.shift = shift->name();
  return m;
}

absl::Status ChannelMapPattern::Rewrite(ir::Graph* graph, const ChannelMapMatch& m) const {
  std::vector<ir::Value*> inputs;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    inputs.push_back(m.inputs[i].has_value() ? QuantizedInput(graph, *m.inputs[i])
                                             : graph->FindValue(m.float_inputs[i]));
  }
  inputs.push_back(graph->FindValue(m.scale));
  inputs.push_back(graph->FindValue(m.shift));
  ir::AttributeMap attrs;
  if (m.clamp.has_value()) {
    attrs.Set("clamp", std::string(m.clamp->activation == ir::UnitActivation::kRelu ? "relu" : "clip"));
    const ir::ClampRange bounds = m.clamp->ClampBounds();
    attrs.Set("min", bounds.lo);
    attrs.Set("max", bounds.hi);
  }
  return replacer_.Replace(graph, Group{m.nodes, m.sink, m.mul}, kQLinearChannelMapOp, inputs, std::move(attrs));
}

std::optional<PoolBeforeDequantizeMatch> PoolBeforeDequantizePattern::Match(const ir::Graph& graph,
                                                                            const ir::Node& anchor) const {
  if (!IsOnnxOp(&anchor, "MaxPool") || anchor.outputs().size() != 1 || anchor.output(0) == nullptr ||
      anchor.output(0)->type().dtype != ir::DataType::kFloat32) {
    return std::nullopt;
  }
  std::optional<DqOperand> x = MatchDqActivation(anchor.input(0));
  if (!x.has_value()) return std::nullopt;
  return PoolBeforeDequantizeMatch{anchor.id(), *x};
}

absl::Status PoolBeforeDequantizePattern::Rewrite(ir::Graph* graph, const PoolBeforeDequantizeMatch& m) const {
  ir::Node* pool = graph->FindNode(m.pool);
  const ir::Node* dq = graph->FindNode(m.x.dq);
  ir::Value* x = QuantizedInput(graph, m.x);
  ir::Value* out = pool->output(0);
  const std::string name = out->name();
  ir::TensorType bytes = out->type();
  bytes.dtype = x->type().dtype;
  bytes.quant = x->type().quant;
  QFUSE_ASSIGN_OR_RETURN(ir::Node * int8_pool,
                         graph->AddNode("MaxPool", graph->UniqueNodeName(pool->name() + "_int8"), {x},
                                        {graph->UniqueValueName(name + "_int8")}, pool->attrs()));
  int8_pool->output(0)->mutable_type() = bytes;
  std::vector<ir::Value*> dq_inputs = {int8_pool->output(0)};
  for (size_t i = 1; i < dq->inputs().size(); ++i) dq_inputs.push_back(dq->input(i));
  QFUSE_ASSIGN_OR_RETURN(ir::Node * new_dq,
                         graph->AddNode("DequantizeLinear", graph->UniqueNodeName(dq->name()), dq_inputs,
                                        {graph->UniqueValueName(name + "_dq")}, dq->attrs()));
  new_dq->output(0)->mutable_type() = out->type();
  graph->ReplaceAllUsesWith(out, new_dq->output(0));
  QFUSE_RETURN_IF_ERROR(graph->RemoveNode(pool));
  return graph->RenameValue(new_dq->output(0), name);
}

}  // namespace qfuse::runtime::int8
