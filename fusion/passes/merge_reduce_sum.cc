#include "fusion/passes/merge_reduce_sum.h"

#include <algorithm>
#include <string>

#include "fusion/rewrite_util.h"

namespace qfuse::fusion {
namespace {

bool IsReduceSum(const ir::Node& n) {
  return n.domain().empty() && n.op_type() == "ReduceSum" && n.outputs().size() == 1;
}

int64_t InputRank(const ir::Node& n) {
  const ir::Shape& s = n.input(0)->type().shape;
  return s.rank_known ? s.rank() : -1;
}

bool KeepDims(const ir::Node& n, bool* keep) {
  absl::StatusOr<int64_t> k = n.attrs().GetInt("keepdims", 1);
  if (!k.ok()) return false;
  *keep = *k != 0;
  return true;
}

}  // namespace

std::optional<std::vector<int64_t>> ReduceSumAxes(const ir::Node& reduce, int64_t input_rank) {
  if (!IsReduceSum(reduce) || input_rank < 0) return std::nullopt;
  const ir::Tensor* t = ConstantInput(reduce, 1);
  if (t == nullptr || t->dtype() != ir::DataType::kInt64 || t->num_elements() == 0) return std::nullopt;
  std::vector<int64_t> axes;
  for (int64_t a : t->values<int64_t>()) {
    if (a < -input_rank || a >= input_rank) return std::nullopt;
    axes.push_back(a < 0 ? a + input_rank : a);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

std::optional<ReduceSumPairMatch> MergeReduceSumPass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  if (!IsReduceSum(anchor) || anchor.input(0) == nullptr) return std::nullopt;
  const ir::Node* first = anchor.input(0)->producer();
  if (first == nullptr || !IsReduceSum(*first) || SoleConsumer(*anchor.input(0)) != &anchor) return std::nullopt;
  const int64_t rank = InputRank(*first);
  auto a1 = ReduceSumAxes(*first, rank);
  bool keep1 = true, keep2 = true;
  if (!a1.has_value() || !KeepDims(*first, &keep1) || !KeepDims(anchor, &keep2)) return std::nullopt;
  // Axes of x that the second reduction's input still has, in order.
  std::vector<int64_t> remaining;
  for (int64_t i = 0; i < rank; ++i) {
    if (keep1 || !std::binary_search(a1->begin(), a1->end(), i)) remaining.push_back(i);
  }
  auto a2 = ReduceSumAxes(anchor, static_cast<int64_t>(remaining.size()));
  if (!a2.has_value()) return std::nullopt;
  ReduceSumPairMatch m{first->id(), anchor.id(), *a1, {}};
  std::vector<int64_t> a2_in_x;
  for (int64_t a : *a2) a2_in_x.push_back(remaining[a]);
  m.axes.insert(m.axes.end(), a2_in_x.begin(), a2_in_x.end());
  std::sort(m.axes.begin(), m.axes.end());
  m.axes.erase(std::unique(m.axes.begin(), m.axes.end()), m.axes.end());
  if (!keep1) m.drop_axes = *a1;
  if (!keep2) m.drop_axes.insert(m.drop_axes.end(), a2_in_x.begin(), a2_in_x.end());
  std::sort(m.drop_axes.begin(), m.drop_axes.end());
  return m;
}

absl::Status MergeReduceSumPass::Rewrite(ir::Graph* graph, const ReduceSumPairMatch& match) const {
  ir::Node* first = graph->FindNode(match.first);
  ir::Node* second = graph->FindNode(match.second);
  const bool drop_all = match.drop_axes == match.axes;
  const bool keep_all = match.drop_axes.empty();
  QFUSE_ASSIGN_OR_RETURN(
      ir::Value * axes,
      graph->AddConstant(graph->UniqueValueName(second->name() + "_merged_axes"),
                         ir::Tensor::FromVector<int64_t>({static_cast<int64_t>(match.axes.size())}, match.axes)));
  ir::AttributeMap attrs;
  attrs.Set("keepdims", int64_t{drop_all ? 0 : 1});
  const std::string out_name = second->output(0)->name();
  QFUSE_ASSIGN_OR_RETURN(ir::Node * merged,
                         graph->AddNode("ReduceSum", second->name() + "_merged", {first->input(0), axes},
                                        {graph->UniqueValueName(out_name + "_merged")}, std::move(attrs)));
  ir::Value* result = merged->output(0);
  // Type of the merged reduction: x's dims with the reduced ones 1 (or dropped).
  ir::TensorType type = first->input(0)->type();
  type.quant.reset();
  if (type.shape.rank_known) {
    std::vector<ir::Dim> dims;
    for (int64_t i = 0; i < type.shape.rank(); ++i) {
      const bool reduced = std::binary_search(match.axes.begin(), match.axes.end(), i);
      if (!reduced) dims.push_back(type.shape.dims[i]);
      else if (!drop_all) dims.push_back(ir::Dim::Known(1));
    }
    type.shape.dims = std::move(dims);
  }
  result->mutable_type() = type;
  if (!drop_all && !keep_all) {
    QFUSE_ASSIGN_OR_RETURN(ir::Value * squeeze_axes,
                           graph->AddConstant(graph->UniqueValueName(second->name() + "_squeeze_axes"),
                                              ir::Tensor::FromVector<int64_t>(
                                                  {static_cast<int64_t>(match.drop_axes.size())}, match.drop_axes)));
    QFUSE_ASSIGN_OR_RETURN(ir::Node * squeeze,
                           graph->AddNode("Squeeze", second->name() + "_squeeze", {result, squeeze_axes},
                                          {graph->UniqueValueName(out_name + "_squeezed")}));
    result = squeeze->output(0);
  }
  return ReplaceAndRemove(graph, second->output(0), result, {second, first});
}

}  // namespace qfuse::fusion
