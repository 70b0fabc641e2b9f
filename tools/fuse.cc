// qfuse fuse: runs the fusion pipeline of a level on a model, prints per-pass
// statistics, optionally proves the result equal to the input on the float runtime,
// and writes the fused model (quantized units written back as standard ops).
//   bazel run //tools:fuse -- --model=models/resnet_small/model.onnx --level=full --check_equivalence
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "fusion/equivalence.h"
#include "fusion/pipeline.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "tools/data_flags.h"
#include "tools/tool_main.h"
#include "tools/workspace_path.h"

ABSL_FLAG(std::string, model, "models/resnet_small/model.onnx", "float ONNX model");
ABSL_FLAG(std::string, level, "full", "fusion level: none, bn or full");
ABSL_FLAG(std::vector<std::string>, disable_passes, {}, "comma-separated pass names to skip");
ABSL_FLAG(bool, check_equivalence, false, "run the float graph before and after on the same inputs");
ABSL_FLAG(std::vector<std::string>, inputs, {},
          "TensorProto .pb files (one per graph input, matched by stored name, else by position) for "
          "--check_equivalence; default: seeded random");
ABSL_FLAG(double, tolerance, 1e-4, "max abs difference --check_equivalence accepts");
ABSL_FLAG(std::string, output, "", "where to write the fused float model (optional)");

namespace qfuse::tools {
namespace {

absl::Status Main() {
  const std::string path = ResolveUserPath(absl::GetFlag(FLAGS_model));
  QFUSE_ASSIGN_OR_RETURN(fusion::FusionLevel level, fusion::ParseFusionLevel(absl::GetFlag(FLAGS_level)));
  const std::string output = absl::GetFlag(FLAGS_output).empty() ? "" : ResolveUserPath(absl::GetFlag(FLAGS_output));
  if (!output.empty() && base::SameFile(output, path)) {
    return absl::InvalidArgumentError(absl::StrCat(output, ": refusing to overwrite the input model"));
  }
  QFUSE_ASSIGN_OR_RETURN(ir::Model model, ir::LoadModel(path));
  std::unique_ptr<ir::Graph> before = model.graph->Clone();
  fusion::PipelineOptions options;
  for (const std::string& pass : absl::GetFlag(FLAGS_disable_passes)) options.disabled_passes.insert(pass);
  QFUSE_ASSIGN_OR_RETURN(std::vector<fusion::PassStats> stats, fusion::Fuse(&model, level, options));
  absl::PrintF("%s: fusion level %s\n", path, fusion::FusionLevelName(level));
  absl::PrintF("%-28s %9s %7s %7s\n", "pass", "rewrites", "before", "after");
  for (const auto& s : stats) absl::PrintF("%-28s %9d %7d %7d\n", s.pass, s.rewrites, s.nodes_before, s.nodes_after);
  absl::PrintF("nodes: %d -> %d\n", before->num_nodes(), model.graph->num_nodes());
  if (absl::GetFlag(FLAGS_check_equivalence)) {
    fusion::EquivalenceOptions eq;
    if (!absl::GetFlag(FLAGS_inputs).empty()) {
      QFUSE_ASSIGN_OR_RETURN(std::vector<ir::NamedTensor> set, ReadInputFiles(*before, absl::GetFlag(FLAGS_inputs)));
      eq.input_sets.push_back(std::move(set));
    }
    QFUSE_ASSIGN_OR_RETURN(fusion::EquivalenceReport report,
                           fusion::CompareGraphsNumerically(*before, *model.graph, eq));
    absl::PrintF("equivalence: %s\n", report.ToString());
    if (report.max_abs_diff > absl::GetFlag(FLAGS_tolerance)) {
      return absl::FailedPreconditionError(absl::StrFormat("fused graph differs by %g (> --tolerance %g)",
                                                           report.max_abs_diff, absl::GetFlag(FLAGS_tolerance)));
    }
  }
  if (!output.empty()) {
    QFUSE_RETURN_IF_ERROR(ir::SaveModel(model, output));
    absl::PrintF("wrote %s\n", output);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace qfuse::tools

int main(int argc, char** argv) {
  return qfuse::tools::RunTool(argc, argv,
                               "Runs qfuse's fusion passes on an ONNX model.",
                               qfuse::tools::Main);
}
