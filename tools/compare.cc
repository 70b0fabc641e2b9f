// qfuse compare: runs two models on the same dataset and prints, per output, how far model
// B is from model A (top-1 agreement, SQNR, cosine, max |a - b|) and, with labels, the
// top-1 accuracy of each.
//   bazel run //tools:compare -- --model_a=models/resnet_small/model.onnx
//     --model_b=out/quantize-resnet_small/model_int8_full.onnx
//     --data=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
//     --labels=/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
// (one command line). Data paths are relative to where `bazel run` started.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "pipeline/model_compare.h"
#include "tools/data_flags.h"
#include "tools/tool_main.h"
#include "tools/workspace_path.h"

ABSL_FLAG(std::string, model_a, "", "reference ONNX model");
ABSL_FLAG(std::string, model_b, "", "ONNX model compared against --model_a");
ABSL_FLAG(std::vector<std::string>, data, {},
          "input data: path, or input_name:path per model input (IDX, .npy, .pb folder, image folder, raw)");
ABSL_FLAG(int64_t, data_samples, 0, "samples from the start of --data (0: all)");
ABSL_FLAG(std::string, labels, "", "IDX label file for --data: also print each model's top-1 accuracy");
ABSL_FLAG(int, threads, 2, "runtime threads");
ABSL_FLAG(bool, progress, true, "show a progress bar while running the models");

namespace qfuse::tools {
namespace {

absl::Status Main() {
  pipeline::CompareOptions options;
  options.model_a = ResolveUserPath(absl::GetFlag(FLAGS_model_a));
  options.model_b = ResolveUserPath(absl::GetFlag(FLAGS_model_b));
  if (options.model_a.empty() || options.model_b.empty()) {
    return absl::InvalidArgumentError("--model_a and --model_b are required");
  }
  if (absl::GetFlag(FLAGS_data).empty()) return absl::InvalidArgumentError("--data is required");
  QFUSE_ASSIGN_OR_RETURN(data::DataSource defaults, ReaderDefaultsFromFlags());
  QFUSE_ASSIGN_OR_RETURN(options.data, DataSourcesFromValues(absl::GetFlag(FLAGS_data), defaults));
  if (absl::GetFlag(FLAGS_data_samples) < 0) return absl::InvalidArgumentError("--data_samples must be >= 0");
  options.max_samples = absl::GetFlag(FLAGS_data_samples);
  if (!absl::GetFlag(FLAGS_labels).empty()) options.labels_path = ResolveUserPath(absl::GetFlag(FLAGS_labels));
  options.executor.num_threads = absl::GetFlag(FLAGS_threads);
  options.show_progress = absl::GetFlag(FLAGS_progress);
  QFUSE_ASSIGN_OR_RETURN(pipeline::ComparisonReport report, pipeline::CompareModels(options));
  absl::PrintF("%s", pipeline::FormatComparison(report, options));
  return absl::OkStatus();
}

}  // namespace
}  // namespace qfuse::tools

int main(int argc, char** argv) {
  return qfuse::tools::RunTool(argc, argv, "Compares two ONNX models' outputs on a dataset.", qfuse::tools::Main);
}
