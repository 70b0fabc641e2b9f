#include "quant/integer_heads.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"

namespace qfuse::quant {
namespace {

using ir::DataType;
using ir::Graph;
using ir::Node;
using ir::Tensor;
using ir::Value;

bool Is(const Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

// The DequantizeLinear producing `v` when its data is of `dtype` (constant or not, as asked)
// and its scale and zero point are constants; nullptr otherwise.
const Node* DequantizeOf(const Value* v, DataType dtype, bool constant) {
  if (v == nullptr || !Is(v->producer(), "DequantizeLinear")) return nullptr;
  const Node* dq = v->producer();
  const Value* data = dq->input(0);
  if (data == nullptr || data->type().dtype != dtype || data->is_constant() != constant) return nullptr;
  for (int i = 1; i <= 2; ++i) {
    if (dq->input(i) == nullptr || !dq->input(i)->is_constant()) return nullptr;
  }
  return dq;
}

// The parts of a unit the integer head is written from, when it qualifies.
struct HeadOperands {
  const Node* x_dq = nullptr;  // UINT8 activation, per tensor
  const Node* w_dq = nullptr;  // INT8 constant weights, zero points 0
  const Node* b_dq = nullptr;  // INT32 constant bias [M], or nullptr
};

std::optional<HeadOperands> Qualifies(const Node& unit) {
  absl::StatusOr<ir::UnitSpec> spec = ir::ReadUnitSpec(unit);
  if (!spec.ok() || spec->base_op != ir::UnitBaseOp::kConv) return std::nullopt;
  const Value* residual = unit.input(ir::kUnitResidual);
  if (residual == nullptr && spec->activation == ir::UnitActivation::kNone) return std::nullopt;  // QLinearConv does it
  if (residual != nullptr && DequantizeOf(residual, DataType::kUint8, false) == nullptr &&
      DequantizeOf(residual, DataType::kInt8, false) == nullptr) {
    return std::nullopt;
  }
  const Value* y = unit.output(0);
  if (y == nullptr || y->is_graph_output() || y->uses().size() != 1 || !Is(y->uses()[0].node, "QuantizeLinear")) {
    return std::nullopt;
  }
  HeadOperands h;
  h.x_dq = DequantizeOf(unit.input(ir::kUnitX), DataType::kUint8, false);
  h.w_dq = DequantizeOf(unit.input(ir::kUnitW), DataType::kInt8, true);
  if (h.x_dq == nullptr || h.w_dq == nullptr || h.x_dq->input(1)->initializer()->num_elements() != 1) {
    return std::nullopt;
  }
  const Tensor& w = *h.w_dq->input(0)->initializer();
  if (w.rank() < 3) return std::nullopt;
  for (int8_t zp : h.w_dq->input(2)->initializer()->values<int8_t>()) {
    if (zp != 0) return std::nullopt;
  }
  if (unit.input(ir::kUnitBias) != nullptr) {
    h.b_dq = DequantizeOf(unit.input(ir::kUnitBias), DataType::kInt32, true);
    if (h.b_dq == nullptr || h.b_dq->input(0)->initializer()->num_elements() != w.dims()[0]) return std::nullopt;
  }
  return h;
}

// Replaces the expanded base op `conv` (Conv(DQ(x), DQ(w), [DQ(b)])) by the integer head.
absl::Status WriteHead(Graph* graph, Node* conv, const HeadOperands& h) {
  const std::string name = conv->name();
  auto fresh = [&](const std::string& suffix) { return graph->UniqueValueName(absl::StrCat(name, suffix)); };
  const Tensor& w = *h.w_dq->input(0)->initializer();
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
                                        {h.x_dq->input(0), w_value, h.x_dq->input(2), w_zp}, {fresh("_acc")},
                                        conv->attrs()));
  Value* acc = integer->output(0);
  acc->mutable_type() = ir::TensorType{DataType::kInt32, acc_float->type().shape, {}};
  if (h.b_dq != nullptr) {
    Tensor bias = *h.b_dq->input(0)->initializer();
    std::vector<int64_t> dims(w.rank() - 1, 1);  // [M, 1, ...]: per channel, broadcast over pixels
    dims[0] = channels;
    QFUSE_RETURN_IF_ERROR(bias.SetDims(dims));
    QFUSE_ASSIGN_OR_RETURN(Value * bias_value, graph->AddConstant(fresh("_bias_int32"), std::move(bias)));
    QFUSE_ASSIGN_OR_RETURN(Node * add, graph->AddNode("Add", name + "_bias", {acc, bias_value}, {fresh("_acc_bias")}));
    add->output(0)->mutable_type() = acc->type();
    acc = add->output(0);
  }
  // d_a[c] = float32(s_x * s_w[c]): the runtime's dequantization scale of the accumulator.
  const float s_x = h.x_dq->input(1)->initializer()->values<float>()[0];
  const Tensor& s_w = *h.w_dq->input(1)->initializer();
  Tensor scales(DataType::kFloat32, s_w.dims());
  for (int64_t c = 0; c < s_w.num_elements(); ++c) scales.data<float>()[c] = s_x * s_w.values<float>()[c];
  ir::AttributeMap attrs;
  if (s_w.num_elements() > 1) attrs.Set("axis", int64_t{1});
  QFUSE_ASSIGN_OR_RETURN(Value * scale_value, graph->AddConstant(fresh("_acc_scale"), std::move(scales)));
  QFUSE_ASSIGN_OR_RETURN(Node * dq, graph->AddNode("DequantizeLinear", name + "_dequantize", {acc, scale_value},
                                                   {fresh("_dequantized")}, attrs));
  dq->output(0)->mutable_type() = acc_float->type();
  graph->ReplaceAllUsesWith(conv->output(0), dq->output(0));
  QFUSE_RETURN_IF_ERROR(graph->RemoveNode(conv));
  // The DequantizeLinear nodes only the float Conv read.
  for (const Node* operand : {h.x_dq, h.w_dq, h.b_dq}) {
    Node* n = operand == nullptr ? nullptr : graph->FindNode(operand->id());
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
    if (ir::IsUnit(*n)) units.push_back(n);
  }
  int64_t written = 0;
  for (Node* unit : units) {
    const std::optional<HeadOperands> h = Qualifies(*unit);
    if (!h.has_value()) continue;
    QFUSE_ASSIGN_OR_RETURN(Node * conv, ir::ExpandUnit(graph, unit));
    QFUSE_RETURN_IF_ERROR(WriteHead(graph, conv, *h));
    ++written;
  }
  return written;
}

}  // namespace qfuse::quant
