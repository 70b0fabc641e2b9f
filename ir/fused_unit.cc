#include "ir/fused_unit.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace qfuse::ir {

bool IsUnit(const Node& node) { return node.domain() == kQfuseDomain && node.op_type() == kUnitOpType; }

absl::StatusOr<UnitSpec> ReadUnitSpec(const Node& node) {
  UnitSpec spec;
  QFUSE_ASSIGN_OR_RETURN(spec.base_op, node.attrs().GetString(kUnitBaseOpAttr, ""));
  if (spec.base_op != "Conv" && spec.base_op != "ConvTranspose" && spec.base_op != "Gemm" && spec.base_op != "MatMul") {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": unit base op '", spec.base_op, "' is unknown"));
  }
  QFUSE_ASSIGN_OR_RETURN(std::string activation, node.attrs().GetString(kUnitActivationAttr, "none"));
  if (activation == "none") {
    spec.activation = UnitActivation::kNone;
  } else if (activation == "relu") {
    spec.activation = UnitActivation::kRelu;
  } else if (activation == "relu6") {
    spec.activation = UnitActivation::kRelu6;
    spec.clip_min = 0.f;
    spec.clip_max = 6.f;
  } else if (activation == "clip") {
    spec.activation = UnitActivation::kClip;
    QFUSE_ASSIGN_OR_RETURN(spec.clip_min, node.attrs().GetFloat(kUnitClipMinAttr, 0.f));
    QFUSE_ASSIGN_OR_RETURN(spec.clip_max, node.attrs().GetFloat(kUnitClipMaxAttr, 0.f));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": unit activation '", activation, "' is unknown"));
  }
  if (node.input(kUnitX) == nullptr || node.input(kUnitW) == nullptr || node.outputs().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": a unit needs X, W and one output"));
  }
  return spec;
}

AttributeMap BaseOpAttributes(const Node& node) {
  AttributeMap attrs = node.attrs();
  for (const char* own : {kUnitBaseOpAttr, kUnitActivationAttr, kUnitClipMinAttr, kUnitClipMaxAttr}) attrs.Erase(own);
  return attrs;
}

namespace {

absl::Status ExpandUnit(Graph* graph, Node* unit) {
  QFUSE_ASSIGN_OR_RETURN(UnitSpec spec, ReadUnitSpec(*unit));
  const std::string base = unit->name();
  Value* out = unit->output(0);
  const std::string out_name = out->name();
  const TensorType out_type = out->type();
  auto fresh = [&](const std::string& suffix) { return graph->UniqueValueName(absl::StrCat(base, suffix)); };

  std::vector<Value*> base_inputs = {unit->input(kUnitX), unit->input(kUnitW)};
  const bool bias_in_base = spec.base_op != "MatMul" && unit->input(kUnitBias) != nullptr;
  if (bias_in_base) base_inputs.push_back(unit->input(kUnitBias));
  QFUSE_ASSIGN_OR_RETURN(Node * op, graph->AddNode(spec.base_op, base, base_inputs, {fresh("_acc")},
                                                   BaseOpAttributes(*unit)));
  Value* current = op->output(0);
  current->mutable_type().dtype = out_type.dtype;
  auto add_node = [&](const std::string& op_type, const std::string& suffix, std::vector<Value*> inputs,
                      AttributeMap attrs = {}) -> absl::Status {
    QFUSE_ASSIGN_OR_RETURN(Node * n, graph->AddNode(op_type, base + suffix, inputs, {fresh(suffix)}, attrs));
    current = n->output(0);
    current->mutable_type().dtype = out_type.dtype;
    return absl::OkStatus();
  };
  if (spec.base_op == "MatMul" && unit->input(kUnitBias) != nullptr) {
    QFUSE_RETURN_IF_ERROR(add_node("Add", "_bias", {current, unit->input(kUnitBias)}));
  }
  if (unit->input(kUnitResidual) != nullptr) {
    QFUSE_RETURN_IF_ERROR(add_node("Add", "_residual", {current, unit->input(kUnitResidual)}));
  }
  if (spec.activation == UnitActivation::kRelu) {
    QFUSE_RETURN_IF_ERROR(add_node("Relu", "_relu", {current}));
  } else if (spec.activation == UnitActivation::kClip || spec.activation == UnitActivation::kRelu6) {
    QFUSE_ASSIGN_OR_RETURN(Value * lo, graph->AddConstant(fresh("_clip_min"), Tensor::Scalar<float>(spec.clip_min)));
    QFUSE_ASSIGN_OR_RETURN(Value * hi, graph->AddConstant(fresh("_clip_max"), Tensor::Scalar<float>(spec.clip_max)));
    QFUSE_RETURN_IF_ERROR(add_node("Clip", "_clip", {current, lo, hi}));
  }
  graph->ReplaceAllUsesWith(out, current);
  QFUSE_RETURN_IF_ERROR(graph->RemoveNode(unit));
  QFUSE_RETURN_IF_ERROR(graph->RenameNode(op, base));  // the base op keeps the unit's name
  QFUSE_RETURN_IF_ERROR(graph->RenameValue(current, out_name));
  current->mutable_type() = out_type;
  return absl::OkStatus();
}

}  // namespace

absl::Status ExpandUnits(Graph* graph) {
  for (Node* node : graph->nodes()) {
    if (IsUnit(*node)) QFUSE_RETURN_IF_ERROR(ExpandUnit(graph, node));
  }
  return absl::OkStatus();
}

}  // namespace qfuse::ir
