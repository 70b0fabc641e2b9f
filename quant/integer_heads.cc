#include "quant/integer_heads.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "runtime/int8/qdq_operands.h"

namespace qfuse::quant {
namespace {

using ir::DataType;
using ir::Graph;
using ir::Node;
using ir::Tensor;
using ir::Value;

bool Is(const Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

// The operands of a unit the integer head is written from (runtime/int8/qdq_operands.h), when
// it qualifies.
struct HeadOperands {
  runtime::int8::DqOperand x;                    // a UINT8 activation, per tensor
  runtime::int8::DqOperand w;                    // INT8 constant weights, zero points 0
  std::optional<runtime::int8::DqOperand> bias;  // INT32 constant [M]
};

// `unit` is a quantized unit, or a plain Conv (levels `bn` and `none`), whose inputs are in the
// same places (ir::UnitInput).
std::optional<HeadOperands> Qualifies(const Graph& graph, const Node& unit) {
  using runtime::int8::MatchDqActivation;
  using runtime::int8::MatchDqConstant;
  const bool plain_conv = Is(&unit, "Conv");
  absl::StatusOr<ir::UnitSpec> spec = plain_conv ? ir::UnitSpec{} : ir::ReadUnitSpec(unit);
  if (!spec.ok() || spec->base_op != ir::UnitBaseOp::kConv) return std::nullopt;
  const Value* residual = plain_conv ? nullptr : unit.input(ir::kUnitResidual);
  if (residual != nullptr && !MatchDqActivation(residual).has_value()) return std::nullopt;
  const Value* y = unit.output(0);
  if (y == nullptr) return std::nullopt;
  // A float graph output that nothing else reads: onnxruntime has no integer Conv with a float
  // output, so it would run the float Conv whatever the unit holds.
  const bool float_output = y->is_graph_output() && y->uses().empty();
  if (!float_output) {
    if (residual == nullptr && spec->activation == ir::UnitActivation::kNone) return std::nullopt;  // QLinearConv
    if (y->is_graph_output() || y->uses().size() != 1 || !Is(y->uses()[0].node, "QuantizeLinear")) {
      return std::nullopt;
    }
  }
  std::optional<runtime::int8::DqOperand> x = MatchDqActivation(unit.input(ir::kUnitX));
  std::optional<runtime::int8::DqOperand> w = MatchDqConstant(unit.input(ir::kUnitW), DataType::kInt8);
  if (!x.has_value() || !w.has_value() ||
      runtime::int8::DequantizeInput(graph, *x)->type().dtype != DataType::kUint8) {  // ConvInteger reads UINT8
    return std::nullopt;
  }
  const Tensor& wt = *runtime::int8::DequantizeInput(graph, *w)->initializer();
  if (wt.rank() < 3 || (w->params.scales.size() > 1 && w->params.axis != 0)) return std::nullopt;
  for (int64_t zp : w->params.zero_points) {
    if (zp != 0) return std::nullopt;
  }
  HeadOperands h{*x, *w, std::nullopt};
  if (unit.input(ir::kUnitBias) != nullptr) {
    h.bias = MatchDqConstant(unit.input(ir::kUnitBias), DataType::kInt32);
    if (!h.bias.has_value() ||
        runtime::int8::DequantizeInput(graph, *h.bias)->initializer()->num_elements() != wt.dims()[0]) {
      return std::nullopt;
    }
  }
  return h;
}

// Replaces the expanded base op `conv` (Conv(DQ(x), DQ(w), [DQ(b)])) by the integer head.
absl::Status WriteHead(Graph* graph, Node* conv, const HeadOperands& h) {
  const std::string name = conv->name();
  auto fresh = [&](const std::string& suffix) { return graph->UniqueValueName(absl::StrCat(name, suffix)); };
  const Node* x_dq = graph->FindNode(h.x.dq);
  const Tensor& w = *runtime::int8::DequantizeInput(*graph, h.w)->initializer();
  const int64_t channels = w.dims()[0];
  Tensor w_u8(DataType::kUint8, w.dims());
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    w_u8.data<uint8_t>()[i] = static_cast<uint8_t>(int32_t{w.data<int8_t>()[i]} + 128);
  }
  QFUSE_ASSIGN_OR_RETURN(Value * w_value, graph->AddConstant(fresh("_weight_uint8"), std::move(w_u8)));
  QFUSE_ASSIGN_OR_RETURN(Value * w_zp, graph->AddConstant(fresh("_weight_zero_point"), Tensor::Scalar<uint8_t>(128)));
  const Value* acc_float = conv->output(0);
  QFUSE_ASSIGN_OR_RETURN(Node * integer,
                         graph->AddNode("ConvInteger", name + "_integer",
                                        {x_dq->input(0), w_value, x_dq->input(2), w_zp}, {fresh("_acc")},
                                        conv->attrs()));
  Value* acc = integer->output(0);
  acc->mutable_type() = ir::TensorType{DataType::kInt32, acc_float->type().shape, {}};
  if (h.bias.has_value()) {
    Tensor bias = *runtime::int8::DequantizeInput(*graph, *h.bias)->initializer();
    std::vector<int64_t> dims(w.rank() - 1, 1);  // [M, 1, ...]: per channel, broadcast over pixels
    dims[0] = channels;
    QFUSE_RETURN_IF_ERROR(bias.SetDims(dims));
    QFUSE_ASSIGN_OR_RETURN(Value * bias_value, graph->AddConstant(fresh("_bias_int32"), std::move(bias)));
    QFUSE_ASSIGN_OR_RETURN(Node * add, graph->AddNode("Add", name + "_bias", {acc, bias_value}, {fresh("_acc_bias")}));
    add->output(0)->mutable_type() = acc->type();
    acc = add->output(0);
  }
  // d_a[c] = float32(s_x * s_w[c]): the runtime's dequantization scale of the accumulator.
  const std::vector<float>& s_w = h.w.params.scales;
  std::vector<float> scales;
  for (float s : s_w) scales.push_back(h.x.params.scales[0] * s);
  const bool per_channel = scales.size() > 1;
  ir::AttributeMap attrs;
  if (per_channel) attrs.Set("axis", int64_t{1});
  QFUSE_ASSIGN_OR_RETURN(
      Value * scale_value,
      graph->AddConstant(fresh("_acc_scale"),
                         per_channel ? Tensor::FromVector<float>({static_cast<int64_t>(scales.size())}, scales)
                                     : Tensor::Scalar<float>(scales[0])));
  QFUSE_ASSIGN_OR_RETURN(Node * dq, graph->AddNode("DequantizeLinear", name + "_dequantize", {acc, scale_value},
                                                   {fresh("_dequantized")}, attrs));
  dq->output(0)->mutable_type() = acc_float->type();
  Value* conv_out = conv->output(0);
  const bool graph_output = conv_out->is_graph_output();
  const std::string out_name = conv_out->name();
  graph->ReplaceAllUsesWith(conv_out, dq->output(0));
  QFUSE_RETURN_IF_ERROR(graph->RemoveNode(conv));
  if (graph_output) QFUSE_RETURN_IF_ERROR(graph->RenameValue(dq->output(0), out_name));  // the user's name
  // The DequantizeLinear nodes only the float Conv read.
  for (ir::NodeId id : {h.x.dq, h.w.dq, h.bias.has_value() ? h.bias->dq : ir::kNoNode}) {
    Node* n = id == ir::kNoNode ? nullptr : graph->FindNode(id);
    if (n != nullptr && n->output(0)->uses().empty() && !n->output(0)->is_graph_output()) {
      QFUSE_RETURN_IF_ERROR(graph->RemoveNode(n));
    }
  }
  return graph->RenameNode(integer, name);  // the unit's name, free again
}

}  // namespace

absl::StatusOr<int64_t> WriteIntegerHeads(Graph* graph) {
  std::vector<Node*> units;
  for (Node* n : graph->nodes()) {
    if (ir::IsUnit(*n) || Is(n, "Conv")) units.push_back(n);
  }
  int64_t written = 0;
  for (Node* unit : units) {
    const std::optional<HeadOperands> h = Qualifies(*graph, *unit);
    if (!h.has_value()) continue;
    Node* conv = unit;
    if (ir::IsUnit(*unit)) {
      QFUSE_ASSIGN_OR_RETURN(conv, ir::ExpandUnit(graph, unit));
    }
    QFUSE_RETURN_IF_ERROR(WriteHead(graph, conv, *h));
    ++written;
  }
  return written;
}

}  // namespace qfuse::quant
