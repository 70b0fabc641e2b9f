#include "fusion/passes/contract_mul_reduce.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "fusion/passes/merge_reduce_sum.h"
#include "fusion/rewrite_util.h"

namespace qfuse::fusion {
namespace {

// Same known size, or the same named symbol.
bool SameDim(const ir::Dim& a, const ir::Dim& b) {
  return a.is_known() ? b.is_known() && a.value == b.value : (!a.symbol.empty() && a.symbol == b.symbol);
}

bool Contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

int IndexOf(const std::vector<int>& v, int x) {
  return static_cast<int>(std::find(v.begin(), v.end(), x) - v.begin());
}

std::vector<int> Concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

ContractionEmitter::ContractionEmitter(ir::Graph* graph, std::string base_name, std::map<int, ir::Dim> dims,
                                       ir::DataType dtype)
    : graph_(graph), base_(std::move(base_name)), dims_(std::move(dims)), dtype_(dtype) {}

std::vector<ir::Dim> ContractionEmitter::DimsOf(const std::vector<int>& labels) const {
  std::vector<ir::Dim> dims;
  for (int l : labels) dims.push_back(l == kBroadcastAxis ? ir::Dim::Known(1) : dims_.at(l));
  return dims;
}

int64_t ContractionEmitter::Count(const std::vector<int>& labels) const {
  int64_t n = 1;
  for (const ir::Dim& d : DimsOf(labels)) n *= d.is_known() ? d.value : 1;
  return n;
}

int ContractionEmitter::NewLabel(ir::Dim dim) {
  dims_[next_label_] = std::move(dim);
  return next_label_++;
}

absl::StatusOr<ir::Value*> ContractionEmitter::Int64s(const std::string& what, const std::vector<int64_t>& values) {
  if (graph_ == nullptr) return nullptr;
  return graph_->AddConstant(graph_->UniqueValueName(absl::StrCat(base_, "_", what)),
                             ir::Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values));
}

absl::StatusOr<LabelledValue> ContractionEmitter::Emit(const std::string& op, std::vector<ir::Value*> inputs,
                                                       std::vector<int> labels, bool materializes) {
  return EmitWithAttrs(op, std::move(inputs), std::move(labels), materializes, {});
}

absl::StatusOr<LabelledValue> ContractionEmitter::EmitWithAttrs(const std::string& op, std::vector<ir::Value*> inputs,
                                                                std::vector<int> labels, bool materializes,
                                                                ir::AttributeMap attrs) {
  ++nodes_;
  if (materializes) materialized_ += Count(labels);
  if (graph_ == nullptr) return LabelledValue{nullptr, std::move(labels)};
  QFUSE_ASSIGN_OR_RETURN(ir::Node * node,
                         graph_->AddNode(op, absl::StrCat(base_, "_", op, "_", nodes_), inputs,
                                         {graph_->UniqueValueName(absl::StrCat(base_, "_", op))}, std::move(attrs)));
  ir::TensorType& type = node->output(0)->mutable_type();
  type.dtype = dtype_;
  type.shape.rank_known = true;
  type.shape.dims = DimsOf(labels);
  return LabelledValue{node->output(0), std::move(labels)};
}

absl::StatusOr<LabelledValue> ContractionEmitter::Transpose(const LabelledValue& t, const std::vector<int>& order) {
  if (order == t.labels) return t;
  std::vector<int64_t> perm;
  for (int l : order) perm.push_back(IndexOf(t.labels, l));
  ir::AttributeMap attrs;
  attrs.Set("perm", perm);
  return EmitWithAttrs("Transpose", {t.value}, order, /*materializes=*/true, std::move(attrs));
}

absl::StatusOr<LabelledValue> ContractionEmitter::RemoveAxes(const LabelledValue& t, const std::vector<int>& keep) {
  std::vector<int64_t> axes;
  std::vector<int> remaining;
  bool sums = false;
  for (size_t i = 0; i < t.labels.size(); ++i) {
    const int l = t.labels[i];
    if (l != kBroadcastAxis && Contains(keep, l)) {
      remaining.push_back(l);
    } else {
      axes.push_back(static_cast<int64_t>(i));
      sums = sums || l != kBroadcastAxis;
    }
  }
  if (axes.empty()) return t;
  QFUSE_ASSIGN_OR_RETURN(ir::Value * axes_value, Int64s("axes", axes));
  if (!sums) return Emit("Squeeze", {t.value, axes_value}, remaining, /*materializes=*/false);
  ir::AttributeMap attrs;
  attrs.Set("keepdims", int64_t{0});
  return EmitWithAttrs("ReduceSum", {t.value, axes_value}, remaining, /*materializes=*/true, std::move(attrs));
}

absl::StatusOr<LabelledValue> ContractionEmitter::ReshapeLabels(const LabelledValue& t, std::vector<int> labels) {
  const std::vector<ir::Dim> from = DimsOf(t.labels);
  const std::vector<ir::Dim> to = DimsOf(labels);
  if (from.size() == to.size() && std::equal(from.begin(), from.end(), to.begin(), SameDim)) {
    return LabelledValue{t.value, std::move(labels)};
  }
  std::vector<int64_t> spec;
  bool inferred = false;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i].is_known() && to[i].value > 0) {
      spec.push_back(to[i].value);
    } else if (!to[i].is_known() && i < from.size() && SameDim(from[i], to[i])) {
      spec.push_back(0);  // copy the input's dim i
    } else if (!to[i].is_known() && !inferred) {
      spec.push_back(-1);
      inferred = true;
    } else {
      return absl::UnimplementedError(absl::StrCat(base_, ": Reshape to these dims needs a computed shape"));
    }
  }
  QFUSE_ASSIGN_OR_RETURN(ir::Value * shape, Int64s("shape", spec));
  return Emit("Reshape", {t.value, shape}, std::move(labels), /*materializes=*/false);
}

absl::StatusOr<ir::Value*> ContractionEmitter::ReshapeTo(const LabelledValue& t, const std::vector<ir::Dim>& dims) {
  std::vector<int> labels;
  for (const ir::Dim& d : dims) labels.push_back(NewLabel(d));
  QFUSE_ASSIGN_OR_RETURN(LabelledValue r, ReshapeLabels(t, labels));
  return r.value;
}

absl::StatusOr<LabelledValue> ContractionEmitter::Regroup(const LabelledValue& t,
                                                          const std::vector<std::vector<int>>& groups) {
  bool trivial = true;
  std::vector<int> labels;
  for (const std::vector<int>& g : groups) {
    if (g.size() == 1) {
      labels.push_back(g[0]);
      continue;
    }
    trivial = false;
    int64_t product = 1;
    bool known = true;
    for (const ir::Dim& d : DimsOf(g)) {
      known = known && d.is_known();
      product *= d.is_known() ? d.value : 1;
    }
    labels.push_back(NewLabel(known ? ir::Dim::Known(product) : ir::Dim{}));
  }
  if (trivial) return t;
  return ReshapeLabels(t, std::move(labels));
}

absl::StatusOr<LabelledValue> ContractionEmitter::BroadcastMul(const LabelledValue& a, const LabelledValue& b,
                                                               const std::vector<int>& out) {
  std::vector<ir::Value*> aligned;
  for (const LabelledValue* t : {&a, &b}) {
    std::vector<int> present;
    for (int l : out) {
      if (Contains(t->labels, l)) present.push_back(l);
    }
    QFUSE_ASSIGN_OR_RETURN(LabelledValue v, Transpose(*t, present));
    // Size-1 axes where the other operand's labels go; leading ones broadcast by rank.
    const size_t lead = present.empty() ? out.size() : IndexOf(out, present[0]);
    std::vector<int64_t> axes;
    std::vector<int> labels;
    for (size_t i = lead; i < out.size(); ++i) {
      const bool has = Contains(present, out[i]);
      if (!has) axes.push_back(static_cast<int64_t>(i - lead));
      labels.push_back(has ? out[i] : kBroadcastAxis);
    }
    if (!axes.empty()) {
      QFUSE_ASSIGN_OR_RETURN(ir::Value * axes_value, Int64s("axes", axes));
      QFUSE_ASSIGN_OR_RETURN(v, Emit("Unsqueeze", {v.value, axes_value}, labels, /*materializes=*/false));
    }
    aligned.push_back(v.value);
  }
  return Emit("Mul", aligned, out, /*materializes=*/true);
}

absl::StatusOr<LabelledValue> ContractionEmitter::Contract(std::vector<LabelledValue> operands,
                                                           const std::vector<int>& out) {
  if (operands.size() == 1) {
    QFUSE_ASSIGN_OR_RETURN(LabelledValue t, RemoveAxes(operands[0], out));
    return Transpose(t, out);
  }
  if (operands.size() != 2) return absl::InvalidArgumentError("Contract takes one or two operands");
  // Labels only one operand has and the result does not keep are summed first.
  QFUSE_ASSIGN_OR_RETURN(LabelledValue a, RemoveAxes(operands[0], Concat(out, operands[1].labels)));
  QFUSE_ASSIGN_OR_RETURN(LabelledValue b, RemoveAxes(operands[1], Concat(out, operands[0].labels)));
  std::vector<int> batch, free_a, free_b, contracted;
  for (int l : out) {
    const bool in_a = Contains(a.labels, l), in_b = Contains(b.labels, l);
    if (in_a && in_b) batch.push_back(l);
    else if (in_a) free_a.push_back(l);
    else if (in_b) free_b.push_back(l);
    else return absl::InvalidArgumentError(absl::StrCat(base_, ": output label in no operand"));
  }
  for (int l : a.labels) {
    if (Contains(b.labels, l) && !Contains(out, l)) contracted.push_back(l);
  }
  if (contracted.empty()) return BroadcastMul(a, b, out);
  // Put the operand whose free labels come first in the output on the left.
  if (!free_a.empty() && !free_b.empty() && IndexOf(out, free_b[0]) < IndexOf(out, free_a[0])) {
    std::swap(a, b);
    std::swap(free_a, free_b);
  }

  // MatMul: a as [batch..., M, K], b as [batch..., K, N].
  QFUSE_ASSIGN_OR_RETURN(a, Transpose(a, Concat(Concat(batch, free_a), contracted)));
  QFUSE_ASSIGN_OR_RETURN(b, Transpose(b, Concat(Concat(batch, contracted), free_b)));
  std::vector<std::vector<int>> groups_a, groups_b;
  for (int l : batch) {
    groups_a.push_back({l});
    groups_b.push_back({l});
  }
  groups_a.push_back(free_a);
  groups_a.push_back(contracted);
  groups_b.push_back(contracted);
  groups_b.push_back(free_b);
  QFUSE_ASSIGN_OR_RETURN(a, Regroup(a, groups_a));
  QFUSE_ASSIGN_OR_RETURN(b, Regroup(b, groups_b));
  std::vector<int> mm_labels = batch;
  mm_labels.push_back(a.labels[a.labels.size() - 2]);
  mm_labels.push_back(b.labels.back());
  QFUSE_ASSIGN_OR_RETURN(LabelledValue r, Emit("MatMul", {a.value, b.value}, mm_labels, /*materializes=*/true));
  QFUSE_ASSIGN_OR_RETURN(r, ReshapeLabels(r, Concat(Concat(batch, free_a), free_b)));
  return Transpose(r, out);
}

// --- The pass.

namespace {

// ReduceSum(Mul(a, b)) as a contraction: label i is the Mul output's axis i; an
// operand axis of size 1 that broadcasts carries no label.
struct MulReducePlan {
  std::vector<LabelledValue> operands;
  std::vector<int> out;
  std::map<int, ir::Dim> dims;
  std::vector<ir::Dim> result_dims;  // the ReduceSum's output
  int64_t elements_before = 0;       // written by the Mul and the ReduceSum
};

int64_t KnownCount(const std::vector<ir::Dim>& dims) {
  int64_t n = 1;
  for (const ir::Dim& d : dims) n *= d.is_known() ? d.value : 1;
  return n;
}

std::optional<MulReducePlan> PlanMulReduce(const ir::Node& mul, const ir::Node& reduce) {
  const ir::TensorType& mt = mul.output(0)->type();
  const ir::TensorType& rt = reduce.output(0)->type();
  if (mt.dtype != ir::DataType::kFloat32 || !mt.shape.rank_known || !rt.shape.rank_known) return std::nullopt;
  const int64_t n = mt.shape.rank();
  auto axes = ReduceSumAxes(reduce, n);
  if (!axes.has_value()) return std::nullopt;
  MulReducePlan plan;
  for (int64_t i = 0; i < n; ++i) plan.dims[static_cast<int>(i)] = mt.shape.dims[i];
  for (int k = 0; k < 2; ++k) {
    ir::Value* v = mul.input(k);
    const ir::Shape& s = v->type().shape;
    if (!s.rank_known || s.rank() > n) return std::nullopt;
    LabelledValue operand{v, {}};
    for (int64_t j = 0; j < s.rank(); ++j) {
      const int64_t i = j + n - s.rank();
      if (s.dims[j].is_known() && s.dims[j].value == 1) {
        operand.labels.push_back(kBroadcastAxis);
      } else if (SameDim(s.dims[j], mt.shape.dims[i])) {
        operand.labels.push_back(static_cast<int>(i));
      } else {
        return std::nullopt;
      }
    }
    plan.operands.push_back(std::move(operand));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int l = static_cast<int>(i);
    if (std::binary_search(axes->begin(), axes->end(), i)) continue;
    if (Contains(plan.operands[0].labels, l) || Contains(plan.operands[1].labels, l)) plan.out.push_back(l);
  }
  plan.result_dims = rt.shape.dims;
  plan.elements_before = KnownCount(mt.shape.dims) + KnownCount(rt.shape.dims);
  return plan;
}

absl::StatusOr<ir::Value*> EmitPlan(ContractionEmitter* emitter, const MulReducePlan& plan) {
  QFUSE_ASSIGN_OR_RETURN(LabelledValue r, emitter->Contract(plan.operands, plan.out));
  return emitter->ReshapeTo(r, plan.result_dims);
}

}  // namespace

std::optional<MulReduceMatch> ContractMulReducePass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  if (!anchor.domain().empty() || anchor.op_type() != "ReduceSum" || anchor.input(0) == nullptr) return std::nullopt;
  const ir::Node* mul = anchor.input(0)->producer();
  if (mul == nullptr || !mul->domain().empty() || mul->op_type() != "Mul" || mul->inputs().size() != 2 ||
      SoleConsumer(*anchor.input(0)) != &anchor) {
    return std::nullopt;
  }
  std::optional<MulReducePlan> plan = PlanMulReduce(*mul, anchor);
  if (!plan.has_value()) return std::nullopt;
  ContractionEmitter dry_run(nullptr, anchor.name(), plan->dims, ir::DataType::kFloat32);
  if (!EmitPlan(&dry_run, *plan).ok()) return std::nullopt;
  if (options_.only_when_fewer_elements && dry_run.materialized() >= plan->elements_before) return std::nullopt;
  return MulReduceMatch{mul->id(), anchor.id()};
}

absl::Status ContractMulReducePass::Rewrite(ir::Graph* graph, const MulReduceMatch& match) const {
  ir::Node* mul = graph->FindNode(match.mul);
  ir::Node* reduce = graph->FindNode(match.reduce);
  std::optional<MulReducePlan> plan = PlanMulReduce(*mul, *reduce);
  if (!plan.has_value()) return absl::InternalError("contract_mul_reduce: plan changed between match and rewrite");
  ContractionEmitter emitter(graph, reduce->name() + "_contract", plan->dims, ir::DataType::kFloat32);
  QFUSE_ASSIGN_OR_RETURN(ir::Value * result, EmitPlan(&emitter, *plan));
  return ReplaceAndRemove(graph, reduce->output(0), result, {reduce, mul});
}

}  // namespace qfuse::fusion
