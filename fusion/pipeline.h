// The fusion pipeline: an ordered list of passes (data, built in pipeline.cc, the one
// place passes are registered) run on a model, with per-pass statistics.
#ifndef QFUSE_FUSION_PIPELINE_H_
#define QFUSE_FUSION_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fusion/pass.h"
#include "fusion/passes/form_units.h"
#include "ir/model.h"

namespace qfuse::fusion {

// How much fusion is applied before quantization.
//   kNone: the graph as imported (BatchNormalization kept, every op on its own).
//   kBn:   graph simplifications and BatchNormalization folded; Add and Relu separate.
//   kFull: kBn plus quantized units Conv/Gemm/MatMul -> [Add] -> [activation].
enum class FusionLevel { kNone, kBn, kFull };

absl::StatusOr<FusionLevel> ParseFusionLevel(const std::string& text);
std::string FusionLevelName(FusionLevel level);

// One step: a pass, run once (a pattern pass rewrites until its pattern matches nowhere).
struct PipelineStep {
  std::unique_ptr<Pass> pass;
};

struct PassStats {
  std::string pass;
  int64_t rewrites = 0;
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
};

struct PipelineOptions {
  std::set<std::string> disabled_passes;  // by Pass::name()
  UnitForms unit_forms;                   // what level kFull's units absorb
  bool verify_after_each_pass = true;
};

// The passes of `level`, in order; kFull's units absorb `unit_forms`.
std::vector<PipelineStep> BuildPipeline(FusionLevel level, const UnitForms& unit_forms = {});

// Names of every registered pass (for --disable_passes help and validation).
std::vector<std::string> AllPassNames();

// Runs the steps on `model`; fails (naming the pass) if a pass leaves an invalid graph.
absl::StatusOr<std::vector<PassStats>> RunPipeline(const std::vector<PipelineStep>& steps, ir::Model* model,
                                                   const PipelineOptions& options = {});

// Convenience: BuildPipeline(level) + RunPipeline.
absl::StatusOr<std::vector<PassStats>> Fuse(ir::Model* model, FusionLevel level, const PipelineOptions& options = {});

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PIPELINE_H_
