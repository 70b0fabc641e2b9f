#include "quant/placement_check.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"

namespace qfuse::quant {
namespace {

using ir::DataType;
using ir::Node;
using ir::Value;

bool Is(const Node* n, const char* op) { return n != nullptr && n->domain().empty() && n->op_type() == op; }

bool IsWeighted(const Node* n) { return n != nullptr && ir::UnitBaseOpOf(*n).has_value(); }

// The single-input ops TensorRT fuses into a weighted op's epilogue.
bool IsFusedActivation(const Node* n) {
  for (const char* op : {"BatchNormalization", "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "LeakyRelu"}) {
    if (Is(n, op)) return true;
  }
  return false;
}

absl::Status Broken(const Node& n, const std::string& rule) {
  return absl::FailedPreconditionError(absl::StrCat(n.Describe(), ": not TensorRT's placement: ", rule));
}

// Rule 1 for one QuantizeLinear / DequantizeLinear.
absl::Status CheckQdqParams(const Node& n) {
  const Value* scale = n.input(1);
  const Value* zero_point = n.input(2);
  if (scale == nullptr || !scale->is_constant()) return Broken(n, "its scale must be a constant");
  if (zero_point == nullptr || !zero_point->is_constant()) {
    return Broken(n, "its zero point must be an explicit INT8 constant");
  }
  if (zero_point->initializer()->dtype() != DataType::kInt8) return Broken(n, "its zero point must be INT8");
  for (int8_t z : zero_point->initializer()->values<int8_t>()) {
    if (z != 0) return Broken(n, "zero points must be 0 (symmetric)");
  }
  for (float s : scale->initializer()->values<float>()) {
    if (!(s > 0)) return Broken(n, "scales must be > 0");
  }
  return absl::OkStatus();
}

bool FromDequantize(const Value* v) { return v != nullptr && Is(v->producer(), "DequantizeLinear"); }

// Rule 2 for a weighted op whose weight is dequantized.
absl::Status CheckWeightedOp(const Node& n) {
  if (!FromDequantize(n.input(0))) return Broken(n, "its activation input must come from a DequantizeLinear");
  const Node* dq = n.input(1)->producer();
  const Node* q = dq->input(0)->producer();
  if (!Is(q, "QuantizeLinear") || q->input(0) == nullptr || !q->input(0)->is_constant() ||
      q->input(0)->initializer()->dtype() != DataType::kFloat32) {
    return Broken(n, "its weight must be FLOAT constant -> QuantizeLinear -> DequantizeLinear");
  }
  const ir::Tensor& w = *q->input(0)->initializer();
  const ir::Tensor& scales = *dq->input(1)->initializer();
  const ir::UnitBaseOp op = *ir::UnitBaseOpOf(n);
  if (scales.num_elements() > 1) {
    if (op == ir::UnitBaseOp::kConvTranspose) return Broken(n, "ConvTranspose weights must be per tensor");
    const int64_t expected_axis = ir::WeightOutputChannelAxis(op, n.attrs()).value_or(-1);
    const int64_t axis = dq->attrs().GetInt("axis", 1).value_or(-1);
    if (axis != expected_axis || expected_axis < 0 || expected_axis >= w.rank() || scales.num_elements() != w.dims()[expected_axis]) {
      return Broken(n, absl::StrCat("per-channel weight scales must run along axis ", expected_axis,
                                    " (output channels)"));
    }
  }
  const Value* bias = n.input(2);
  if (bias != nullptr && !ir::BiasFollowsBase(op) && (!bias->is_constant() || bias->type().dtype != DataType::kFloat32)) {
    return Broken(n, "its bias must be a FLOAT constant (TensorRT quantizes the bias itself)");
  }
  return absl::OkStatus();
}

// A MatMul whose second input is a dequantized activation, not a weight (attention's Q K^T and
// P V): it has no weight, and TensorRT takes both inputs from DequantizeLinears (rule 1:
// every input of the op quantized; rule 1 of CheckQdqParams keeps both per tensor).
bool IsActivationMatMul(const Node& n) {
  if (ir::UnitBaseOpOf(n) != ir::UnitBaseOp::kMatMul || !FromDequantize(n.input(1))) return false;
  const Value* quantized = n.input(1)->producer()->input(0);
  if (quantized == nullptr) return false;
  const Node* q = quantized->producer();
  return !quantized->is_constant() &&
         !(Is(q, "QuantizeLinear") && q->input(0) != nullptr && q->input(0)->is_constant());
}

absl::Status CheckActivationMatMul(const Node& n) {
  if (!FromDequantize(n.input(0))) {
    return Broken(n, "both inputs of a MatMul of two activations must come from a DequantizeLinear");
  }
  return absl::OkStatus();
}

enum class Origin { kOther, kFloatWeighted, kQuantizedWeighted };

// Where `v` comes from, through epilogue ops: a weighted op kept float, a quantized one (its
// weight dequantized: TensorRT fuses what follows into it), or anything else.
Origin WeightedOrigin(const Value* v) {
  for (int depth = 0; v != nullptr && depth < 8; ++depth) {
    const Node* p = v->producer();
    if (IsWeighted(p)) return FromDequantize(p->input(1)) ? Origin::kQuantizedWeighted : Origin::kFloatWeighted;
    if (Is(p, "Mul") && p->inputs().size() == 2 && p->input(1)->producer() != nullptr &&
        Is(p->input(1)->producer(), "Sigmoid")) {  // SiLU: x * Sigmoid(x)
      v = p->input(0);
      continue;
    }
    if (!IsFusedActivation(p)) return Origin::kOther;
    v = p->input(0);
  }
  return Origin::kOther;
}

}  // namespace

absl::Status CheckTensorRtPlacement(const ir::Graph& graph) {
  for (const Node* n : graph.nodes()) {
    if (Is(n, "QuantizeLinear") || Is(n, "DequantizeLinear")) {
      QFUSE_RETURN_IF_ERROR(CheckQdqParams(*n));
      const bool weight = Is(n, "QuantizeLinear") ? n->input(0)->is_constant()
                                                   : n->input(0)->producer() != nullptr &&
                                                         Is(n->input(0)->producer(), "QuantizeLinear") &&
                                                         n->input(0)->producer()->input(0)->is_constant();
      if (!weight && n->input(1)->initializer()->num_elements() != 1) {
        return Broken(*n, "activation scales must be one value (per tensor)");
      }
    }
    if (IsWeighted(n) && FromDequantize(n->input(1))) {
      QFUSE_RETURN_IF_ERROR(IsActivationMatMul(*n) ? CheckActivationMatMul(*n) : CheckWeightedOp(*n));
    }
    if (Is(n, "QuantizeLinear") && IsWeighted(n->input(0)->producer())) {
      for (const ir::Use& q_use : n->output(0)->uses()) {
        if (!Is(q_use.node, "DequantizeLinear")) continue;
        for (const ir::Use& use : q_use.node->output(0)->uses()) {
          if (IsFusedActivation(use.node)) {
            return Broken(*n, absl::StrCat("a QuantizeLinear between ", n->input(0)->producer()->Describe(), " and ",
                                           use.node->Describe(), " that TensorRT fuses into it"));
          }
        }
      }
    }
    // Rule 4: an Add that TensorRT fuses into a quantized weighted op (no operand a DQ, a
    // constant or a float weighted op, which would take the Add instead) lacks its int8 residual.
    if (Is(n, "Add") && n->inputs().size() == 2) {
      bool quantized_side = false, other_owner = false;
      for (const Value* in : n->inputs()) {
        const Origin origin = WeightedOrigin(in);
        quantized_side = quantized_side || origin == Origin::kQuantizedWeighted;
        other_owner = other_owner || origin == Origin::kFloatWeighted || FromDequantize(in) || in->is_constant();
      }
      if (quantized_side && !other_owner) {
        return Broken(*n, "the residual input of an Add after a weighted op must come from a DequantizeLinear");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace qfuse::quant
