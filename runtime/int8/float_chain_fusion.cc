#include "runtime/int8/float_chain_fusion.h"

#include "base/status_macros.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/channel_affine_fusion.h"
#include "runtime/int8/gelu_fusion.h"
#include "runtime/int8/group_replacer.h"
#include "runtime/int8/layer_norm_fusion.h"

namespace qfuse::runtime::int8 {
namespace {

// The op each chain's pattern is anchored at.
constexpr char kLayerNormAnchor[] = "ReduceMean";
constexpr char kSimplifiedLayerNormAnchor[] = "Pow";
constexpr char kGeluAnchor[] = "Erf";
constexpr char kChannelAffineAnchor[] = "Mul";

}  // namespace

bool HasFloatChainAnchor(const ir::Graph& graph) {
  for (const ir::Node* n : graph.nodes()) {
    if (n->domain().empty() && (n->op_type() == kLayerNormAnchor || n->op_type() == kSimplifiedLayerNormAnchor ||
                                n->op_type() == kGeluAnchor || n->op_type() == kChannelAffineAnchor)) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<FloatChainStats> FuseFloatChains(ir::Graph* graph) {
  const LoweringOptions options;
  LoweringStats lowering_stats;
  const Replacer replacer(options, &lowering_stats);
  const LayerNormPattern layer_norm(replacer);
  const SimplifiedLayerNormPattern simplified_layer_norm(replacer);
  const GeluPattern gelu(replacer);
  const ChannelAffinePattern channel_affine(replacer);
  ir::rewrite::RuleTable table;
  table.Add({kLayerNormAnchor}, &layer_norm);
  // Where the full pattern did not take the chain (its ReduceMean comes first in graph order).
  table.Add({kSimplifiedLayerNormAnchor}, &simplified_layer_norm);
  table.Add({kGeluAnchor}, &gelu);
  table.Add({kChannelAffineAnchor}, &channel_affine);
  QFUSE_ASSIGN_OR_RETURN(auto rewrites, ir::rewrite::RewriteOnce(table, graph));
  FloatChainStats stats;
  stats.layer_norms = rewrites[&layer_norm] + rewrites[&simplified_layer_norm];
  stats.gelus = rewrites[&gelu];
  stats.channel_affines = rewrites[&channel_affine];
  if (stats.layer_norms + stats.gelus + stats.channel_affines > 0) {
    graph->RemoveUnusedConstants();
    QFUSE_RETURN_IF_ERROR(graph->Verify());
  }
  return stats;
}

}  // namespace qfuse::runtime::int8
