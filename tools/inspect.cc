// qfuse inspect: prints a model summary (inputs/outputs, opset, op histogram,
// parameter count, initializer bytes).
//   bazel run //tools:inspect -- --model=path/to/model.onnx
#include <cstdio>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "ir/onnx_import.h"
#include "tools/workspace_path.h"

ABSL_FLAG(std::string, model, "models/resnet_small/model.onnx",
          "ONNX model to inspect (relative paths resolve against the workspace under bazel run)");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Prints a summary of an ONNX model as qfuse imports it.");
  absl::ParseCommandLine(argc, argv);
  const std::string path = qfuse::tools::ResolveUserPath(absl::GetFlag(FLAGS_model));
  absl::StatusOr<qfuse::ir::Model> model = qfuse::ir::LoadModel(path);
  if (!model.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  const qfuse::ir::Graph& graph = *model->graph;
  absl::PrintF("model:    %s\n", path);
  absl::PrintF("opset:    %d (ir_version %d, producer '%s %s')\n", model->opset, model->ir_version,
               model->producer_name, model->producer_version);
  absl::PrintF("inputs:\n");
  for (const auto* v : graph.inputs()) absl::PrintF("  %-24s %s\n", v->name(), v->type().ToString());
  absl::PrintF("outputs:\n");
  for (const auto* v : graph.outputs()) absl::PrintF("  %-24s %s\n", v->name(), v->type().ToString());
  std::map<std::string, int> histogram;
  for (const auto* n : graph.nodes()) ++histogram[n->op_type()];
  absl::PrintF("nodes:    %d\n", graph.num_nodes());
  for (const auto& [op, count] : histogram) absl::PrintF("  %-24s %d\n", op, count);
  int64_t params = 0;
  int64_t bytes = 0;
  const auto constants = graph.constants();
  for (const auto* c : constants) {
    params += c->initializer()->num_elements();
    bytes += static_cast<int64_t>(c->initializer()->byte_size());
  }
  absl::PrintF("constants: %d tensors, %d parameters, %d bytes (%.2f MiB)\n", constants.size(), params, bytes,
               bytes / 1048576.0);
  return 0;
}
