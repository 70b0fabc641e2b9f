#include "runtime/int8/qdq_operands.h"

#include <cmath>
#include <cstdint>

namespace qfuse::runtime::int8 {
namespace {

using ir::DataType;
using ir::Node;
using ir::QuantParams;
using ir::Value;

bool Is(const Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

// Scale and zero point inputs (1, 2) and axis of a QuantizeLinear / DequantizeLinear node,
// when constant. `qtype` is the quantized type (INT8/UINT8/INT32).
std::optional<QuantParams> ReadQdqParams(const Node& n, DataType qtype) {
  const Value* scale = n.input(1);
  const Value* zp = n.input(2);
  if (scale == nullptr || !scale->is_constant() || scale->initializer()->dtype() != DataType::kFloat32) {
    return std::nullopt;
  }
  const ir::Tensor& s = *scale->initializer();
  if (s.rank() > 1 || s.num_elements() < 1) return std::nullopt;
  QuantParams out;
  for (float v : s.values<float>()) {
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    out.scales.push_back(v);
  }
  const int64_t count = s.num_elements();
  if (zp == nullptr) {
    if (qtype != DataType::kUint8 && qtype != DataType::kInt32) return std::nullopt;
    out.zero_points.assign(count, 0);
  } else {
    if (!zp->is_constant() || zp->initializer()->dtype() != qtype || zp->initializer()->num_elements() != count) {
      return std::nullopt;
    }
    const ir::Tensor& z = *zp->initializer();
    for (int64_t i = 0; i < count; ++i) {
      switch (qtype) {
        case DataType::kInt8: out.zero_points.push_back(z.data<int8_t>()[i]); break;
        case DataType::kUint8: out.zero_points.push_back(z.data<uint8_t>()[i]); break;
        case DataType::kInt32: out.zero_points.push_back(z.data<int32_t>()[i]); break;
        default: return std::nullopt;
      }
    }
  }
  if (s.rank() == 1 && count > 1) {
    absl::StatusOr<int64_t> axis = n.attrs().GetInt("axis", 1);
    if (!axis.ok()) return std::nullopt;
    out.axis = *axis;
  }
  return out;
}

// The DequantizeLinear producing `v`, or nullptr.
const Node* DequantizeOf(const Value* v) {
  return v != nullptr && Is(v->producer(), "DequantizeLinear") ? v->producer() : nullptr;
}

}  // namespace

std::optional<DqOperand> MatchDqActivation(const Value* v) {
  const Node* dq = DequantizeOf(v);
  if (dq == nullptr) return std::nullopt;
  const Value* q = dq->input(0);
  if (q == nullptr || q->is_constant() || (q->type().dtype != DataType::kInt8 && q->type().dtype != DataType::kUint8)) {
    return std::nullopt;
  }
  std::optional<QuantParams> p = ReadQdqParams(*dq, q->type().dtype);
  if (!p.has_value() || p->scales.size() != 1) return std::nullopt;
  p->axis.reset();
  if (q->type().quant.has_value() && !(*q->type().quant == *p)) return std::nullopt;
  return DqOperand{dq->id(), *p};
}

std::optional<DqOperand> MatchDqConstant(const Value* v, DataType dtype) {
  const Node* dq = DequantizeOf(v);
  if (dq == nullptr) return std::nullopt;
  const Value* data = dq->input(0);
  if (data == nullptr || !data->is_constant() || data->initializer()->dtype() != dtype) return std::nullopt;
  std::optional<QuantParams> p = ReadQdqParams(*dq, dtype);
  if (!p.has_value()) return std::nullopt;
  if (p->axis.has_value() && *p->axis < 0) *p->axis += data->initializer()->rank();
  return DqOperand{dq->id(), *p};
}

std::optional<DqOperand> MatchDqAccumulator(const Value* v) {
  const Node* dq = DequantizeOf(v);
  if (dq == nullptr) return std::nullopt;
  const Value* acc = dq->input(0);
  if (acc == nullptr || acc->is_constant() || acc->type().dtype != DataType::kInt32) return std::nullopt;
  std::optional<QuantParams> p = ReadQdqParams(*dq, DataType::kInt32);
  if (!p.has_value()) return std::nullopt;
  for (int64_t zp : p->zero_points) {
    if (zp != 0) return std::nullopt;
  }
  if (p->axis.has_value() && *p->axis < 0) {
    if (!acc->type().shape.rank_known) return std::nullopt;
    *p->axis += static_cast<int64_t>(acc->type().shape.dims.size());
  }
  return DqOperand{dq->id(), *p};
}

ir::Value* QuantizedInput(ir::Graph* graph, const DqOperand& operand) {
  Value* v = graph->FindNode(operand.dq)->input(0);
  v->mutable_type().quant = operand.params;
  return v;
}

const ir::Value* DequantizeInput(const ir::Graph& graph, const DqOperand& operand) {
  return graph.FindNode(operand.dq)->input(0);
}

std::optional<Sink> MatchQuantizeSink(const Value& y) {
  if (y.type().dtype != DataType::kFloat32 || y.is_graph_output() || y.uses().size() != 1) return std::nullopt;
  const ir::Use& use = y.uses()[0];
  if (!Is(use.node, "QuantizeLinear") || use.input_index != 0) return std::nullopt;
  const Node& q = *use.node;
  const Value* zp = q.input(2);
  const DataType qtype = zp != nullptr && zp->is_constant() ? zp->initializer()->dtype() : DataType::kUint8;
  if (qtype != DataType::kInt8 && qtype != DataType::kUint8) return std::nullopt;
  std::optional<QuantParams> p = ReadQdqParams(q, qtype);
  if (!p.has_value() || p->scales.size() != 1) return std::nullopt;
  p->axis.reset();
  return Sink{q.id(), *p, qtype};
}

std::optional<Sink> MatchOutputSink(const Value& y) {
  if (y.type().dtype != DataType::kFloat32 || !y.is_graph_output() || !y.uses().empty()) return std::nullopt;
  return Sink{};
}

}  // namespace qfuse::runtime::int8
