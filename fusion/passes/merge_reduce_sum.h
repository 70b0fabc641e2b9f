// Merges ReduceSum(ReduceSum(x, A1), A2) into one ReduceSum over the union of the axes,
// with A2 remapped to x's axes when the first reduction drops its axes (keepdims 0).
// When the two keepdims differ, the merged ReduceSum keeps every axis and a Squeeze
// drops the ones the pair would have dropped.
#ifndef QFUSE_FUSION_PASSES_MERGE_REDUCE_SUM_H_
#define QFUSE_FUSION_PASSES_MERGE_REDUCE_SUM_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "fusion/pass.h"

namespace qfuse::fusion {

// The sorted, distinct, non-negative axes a default-domain ReduceSum with a constant,
// non-empty INT64 axes input reduces over an input of `input_rank` dims; nullopt for
// any other form (absent or empty axes, non-constant axes, axes out of range).
std::optional<std::vector<int64_t>> ReduceSumAxes(const ir::Node& reduce, int64_t input_rank);

struct ReduceSumPairMatch {
  ir::NodeId first;   // reads x
  ir::NodeId second;  // reads the first's output, its sole consumer
  std::vector<int64_t> axes;       // union, as axes of x
  std::vector<int64_t> drop_axes;  // axes of x absent from the pair's output
};

class MergeReduceSumPass : public PatternPass<ReduceSumPairMatch> {
 public:
  std::string name() const override { return "merge_reduce_sum"; }

 protected:
  std::vector<std::string> AnchorOps() const override { return {"ReduceSum"}; }
  std::optional<ReduceSumPairMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const ReduceSumPairMatch& match) const override;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_MERGE_REDUCE_SUM_H_
