#include "fusion/passes/lower_einsum.h"

#include <algorithm>
#include <map>

#include "fusion/passes/contract_mul_reduce.h"
#include "fusion/rewrite_util.h"
#include "ir/einsum_equation.h"

namespace qfuse::fusion {
namespace {

constexpr size_t kMaxOperands = 3;

using Equation = ir::EinsumEquation;

bool Contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The equation when every operand dim has its own letter ("...", diagonals and traces stay
// with the Einsum kernel).
std::optional<Equation> ParseEquation(const std::string& raw) {
  absl::StatusOr<Equation> e = ir::ParseEinsumEquation(raw);
  if (!e.ok() || !ir::HasOnlyDistinctLetters(*e)) return std::nullopt;
  return *std::move(e);
}

struct EinsumPlan {
  Equation equation;
  std::map<int, ir::Dim> dims;
  ir::DataType dtype;
};

std::optional<EinsumPlan> PlanEinsum(const ir::Node& node) {
  if (!node.domain().empty() || node.op_type() != "Einsum" || node.outputs().size() != 1) return std::nullopt;
  absl::StatusOr<std::string> text = node.attrs().GetString("equation", "");
  if (!text.ok()) return std::nullopt;
  auto eq = ParseEquation(*text);
  if (!eq.has_value() || eq->inputs.size() != node.inputs().size() || eq->inputs.empty() ||
      eq->inputs.size() > kMaxOperands) {
    return std::nullopt;
  }
  EinsumPlan plan{*eq, {}, node.output(0)->type().dtype};
  if (plan.dtype != ir::DataType::kFloat32 && plan.dtype != ir::DataType::kFloat64) return std::nullopt;
  for (size_t k = 0; k < eq->inputs.size(); ++k) {
    const ir::Value* v = node.input(k);
    if (v == nullptr) return std::nullopt;
    const ir::Shape& s = v->type().shape;
    if (!s.rank_known || s.rank() != static_cast<int64_t>(eq->inputs[k].size())) return std::nullopt;
    for (size_t i = 0; i < eq->inputs[k].size(); ++i) {
      auto [it, inserted] = plan.dims.emplace(eq->inputs[k][i], s.dims[i]);
      if (!inserted && !it->second.is_known() && s.dims[i].is_known()) it->second = s.dims[i];  // prefer known
    }
  }
  return plan;
}

// Emits the lowering; the result holds the Einsum's output.
absl::StatusOr<LabelledValue> EmitEinsum(ContractionEmitter* emitter, const ir::Node& node, const EinsumPlan& plan) {
  const Equation& eq = plan.equation;
  std::vector<LabelledValue> operands;
  for (size_t k = 0; k < eq.inputs.size(); ++k) operands.push_back({node.input(k), eq.inputs[k]});
  if (operands.size() == 1) return emitter->Contract({operands[0]}, eq.output);
  LabelledValue acc = operands[0];
  for (size_t k = 1; k < operands.size(); ++k) {
    const bool last = k + 1 == operands.size();
    std::vector<int> keep = eq.output;
    if (!last) {
      // Labels a later operand still needs stay, after the output's ones.
      for (size_t j = k + 1; j < operands.size(); ++j) {
        for (int l : eq.inputs[j]) {
          if (!Contains(keep, l) && (Contains(acc.labels, l) || Contains(operands[k].labels, l))) keep.push_back(l);
        }
      }
      std::vector<int> present;
      for (int l : keep) {
        if (Contains(acc.labels, l) || Contains(operands[k].labels, l)) present.push_back(l);
      }
      keep = std::move(present);
    }
    QFUSE_ASSIGN_OR_RETURN(acc, emitter->Contract({acc, operands[k]}, keep));
  }
  return acc;
}

bool IsOperand(const ir::Node& node, const ir::Value* v) {
  return std::find(node.inputs().begin(), node.inputs().end(), v) != node.inputs().end();
}

}  // namespace

std::optional<EinsumMatch> LowerEinsumPass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  std::optional<EinsumPlan> plan = PlanEinsum(anchor);
  if (!plan.has_value()) return std::nullopt;
  ContractionEmitter dry_run(nullptr, anchor.name(), plan->dims, plan->dtype);
  absl::StatusOr<LabelledValue> r = EmitEinsum(&dry_run, anchor, *plan);
  // A pure relabelling ("ij->ij") emits nothing: leave it to the Einsum.
  if (!r.ok() || dry_run.nodes() == 0) return std::nullopt;
  return EinsumMatch{anchor.id()};
}

absl::Status LowerEinsumPass::Rewrite(ir::Graph* graph, const EinsumMatch& match) const {
  ir::Node* einsum = graph->FindNode(match.einsum);
  std::optional<EinsumPlan> plan = PlanEinsum(*einsum);
  if (!plan.has_value()) return absl::InternalError("lower_einsum: plan changed between match and rewrite");
  ContractionEmitter emitter(graph, einsum->name() + "_lowered", plan->dims, plan->dtype);
  QFUSE_ASSIGN_OR_RETURN(LabelledValue r, EmitEinsum(&emitter, *einsum, *plan));
  if (IsOperand(*einsum, r.value)) return absl::InternalError("lower_einsum: lowering emitted no node");
  return ReplaceAndRemove(graph, einsum->output(0), r.value, {einsum});
}

}  // namespace qfuse::fusion
