// The pass pipelines of every fusion level: the one place passes are registered.
#include "fusion/pipeline.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "fusion/passes/contract_mul_reduce.h"
#include "fusion/passes/fold_batchnorm.h"
#include "fusion/passes/form_units.h"
#include "fusion/passes/fuse_hard_swish.h"
#include "fusion/passes/lower_einsum.h"
#include "fusion/passes/merge_branches.h"
#include "fusion/passes/merge_reduce_sum.h"
#include "fusion/passes/remove_identity.h"

namespace qfuse::fusion {

absl::StatusOr<FusionLevel> ParseFusionLevel(const std::string& text) {
  if (text == "none") return FusionLevel::kNone;
  if (text == "bn") return FusionLevel::kBn;
  if (text == "full") return FusionLevel::kFull;
  return absl::InvalidArgumentError(absl::StrCat("fusion level '", text, "' is not one of none, bn, full"));
}

std::string FusionLevelName(FusionLevel level) {
  switch (level) {
    case FusionLevel::kNone: return "none";
    case FusionLevel::kBn: return "bn";
    case FusionLevel::kFull: return "full";
  }
  return "?";
}

std::vector<PipelineStep> BuildPipeline(FusionLevel level, const UnitForms& unit_forms) {
  std::vector<PipelineStep> steps;
  if (level == FusionLevel::kNone) return steps;  // the graph exactly as imported
  // Drop no-ops first so they do not break the patterns below.
  steps.push_back({std::make_unique<RemoveIdentityPass>()});
  steps.push_back({std::make_unique<RemoveDeadNodesPass>()});
  // Einsum as Transpose/Reshape/MatMul/Mul/ReduceSum, for runtimes without Einsum.
  steps.push_back({std::make_unique<LowerEinsumPass>()});
  // ReduceSum(ReduceSum(x)) as one ReduceSum over the union of the axes.
  steps.push_back({std::make_unique<MergeReduceSumPass>()});
  // ReduceSum(Mul(a, b)) as a MatMul contraction when that writes fewer elements.
  steps.push_back({std::make_unique<ContractMulReducePass>()});
  // x * Clip(x + 3, 0, 6) / 6 as one HardSwish, which units then take in.
  steps.push_back({std::make_unique<FuseHardSwishPass>()});
  // Fold BN into the op before it; what cannot fold becomes a per-channel Mul+Add.
  steps.push_back({std::make_unique<FoldBatchNormPass>()});
  steps.push_back({std::make_unique<BatchNormToScaleShiftPass>()});
  // RepVGG branches summed by Add become one Conv. After BN folding, so each branch is
  // a plain Conv+bias, x, or x's BN as a per-channel Mul+Add: one merge rule per form
  // instead of one per BN placement; before units, which would absorb the Add.
  steps.push_back({std::make_unique<MergeBranchesPass>()});
  if (level == FusionLevel::kFull) {
    // Conv/Gemm/MatMul -> [Add] -> [Relu, Clip, HardSwish, SiLU, Sigmoid, ...] become quantized units.
    steps.push_back({std::make_unique<FormUnitsPass>(unit_forms)});
  }
  return steps;
}

std::vector<std::string> AllPassNames() {
  std::vector<std::string> names;
  for (const PipelineStep& step : BuildPipeline(FusionLevel::kFull)) names.push_back(step.pass->name());
  return names;
}

absl::StatusOr<std::vector<PassStats>> RunPipeline(const std::vector<PipelineStep>& steps, ir::Model* model,
                                                   const PipelineOptions& options) {
  for (const std::string& disabled : options.disabled_passes) {
    const std::vector<std::string> known = AllPassNames();
    if (std::find(known.begin(), known.end(), disabled) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown pass '", disabled, "' in --disable_passes"));
    }
  }
  std::vector<PassStats> stats;
  ir::Graph* graph = model->graph.get();
  for (const PipelineStep& step : steps) {
    if (options.disabled_passes.count(step.pass->name()) > 0) continue;
    PassStats s{step.pass->name(), 0, graph->num_nodes(), 0};
    absl::StatusOr<int64_t> rewrites = step.pass->Run(graph);
    if (!rewrites.ok()) {
      return absl::Status(rewrites.status().code(),
                          absl::StrCat("pass ", step.pass->name(), ": ", rewrites.status().message()));
    }
    s.rewrites = *rewrites;
    graph->RemoveUnusedConstants();
    if (options.verify_after_each_pass) {
      absl::Status verified = graph->Verify();
      if (!verified.ok()) {
        return absl::InternalError(absl::StrCat("pass ", step.pass->name(), " left an invalid graph: ",
                                                verified.message()));
      }
    }
    s.nodes_after = graph->num_nodes();
    stats.push_back(s);
  }
  return stats;
}

absl::StatusOr<std::vector<PassStats>> Fuse(ir::Model* model, FusionLevel level, const PipelineOptions& options) {
  return RunPipeline(BuildPipeline(level, options.unit_forms), model, options);
}

}  // namespace qfuse::fusion
