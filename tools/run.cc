// qfuse run: executes a model on the reference runtime and prints an output summary.
//   bazel run //tools:run -- --model=models/resnet_small/model.onnx --inputs=models/resnet_small/test_data_set_0/input_0.pb
//   bazel run //tools:run -- --model=... --bench --runs=50
// Inputs: .pb TensorProto files (matched to graph inputs by their name, else by
// position), or seeded uniform random data in [0, 1) when none are given.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "data/dataset.h"
#include "fusion/pipeline.h"
#include "ir/onnx_import.h"
#include "pipeline/evaluation.h"
#include "runtime/cpu_isa.h"
#include "runtime/engine_tuner.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "tools/data_flags.h"
#include "tools/tool_main.h"
#include "tools/workspace_path.h"

ABSL_FLAG(std::string, model, "models/resnet_small/model.onnx", "ONNX model to run");
ABSL_FLAG(std::vector<std::string>, inputs, {},
          "comma-separated TensorProto .pb files, one per graph input (matched by stored name, else by position)");
ABSL_FLAG(std::vector<std::string>, data, {},
          "run over a dataset instead: path, or input_name:path per model input (IDX, .npy, .pb folder, image "
          "folder, raw)");
ABSL_FLAG(int64_t, data_samples, 0, "with --data: samples to run (0: all)");
ABSL_FLAG(std::string, save_outputs, "", "with --data: write the first output as raw little-endian float32");
ABSL_FLAG(bool, integer_kernels, true, "run Q/DQ models on integer kernels (false: simulated in float)");
ABSL_FLAG(bool, fold_clamps, true,
          "integer kernels: fold a requantizing Relu/Clip into the unit before it (same bytes; false: separate)");
ABSL_FLAG(int, seed, 1, "seed for random inputs");
ABSL_FLAG(int, batch, 1, "random inputs: size of their batch dim (every symbolic/unknown dim --dims does not name)");
ABSL_FLAG(std::vector<std::string>, dims, {},
          "sizes of named symbolic input dims for random inputs, e.g. height=224,width=224 (others take the batch)");
ABSL_FLAG(std::vector<std::string>, batches, (std::vector<std::string>{"1", "64"}), "with --bench: the batch sizes timed");
ABSL_FLAG(int, threads, 2, "runtime threads (including the caller)");
ABSL_FLAG(bool, bench, false, "benchmark: median latency at each of --batches");
ABSL_FLAG(int, runs, 30, "timed runs per benchmark setting (after the warm-up runs, engine tuning included)");
ABSL_FLAG(std::string, fusion, "none",
          "fuse the graph before running: none (as given), bn or full (what onnxruntime's graph optimizer does "
          "to float models: BN folded, activations fused)");
ABSL_FLAG(bool, profile, false, "with --bench: time per operator type at batch 64");
ABSL_FLAG(int32_t, profile_top, 0, "with --profile: also list this many nodes, the slowest first");

namespace qfuse::tools {
namespace {

using ir::NamedTensor;

absl::StatusOr<std::vector<NamedTensor>> SeededInputs(const ir::Graph& graph, int64_t batch) {
  runtime::RandomInputOptions options;
  options.batch = batch;
  options.seed = static_cast<uint32_t>(absl::GetFlag(FLAGS_seed));
  for (const std::string& entry : absl::GetFlag(FLAGS_dims)) {
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    int64_t size = 0;
    if (!absl::SimpleAtoi(kv.second, &size) || size <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--dims: '", entry, "' is not name=positive size"));
    }
    options.symbol_sizes[kv.first] = size;
  }
  return runtime::RandomInputs(graph, options);
}

void PrintSummary(const std::vector<NamedTensor>& outputs) {
  for (const NamedTensor& out : outputs) {
    const ir::Tensor& t = out.tensor;
    absl::PrintF("%s: %s%s", out.name, ir::DataTypeName(t.dtype()), ir::DimsToString(t.dims()));
    if (t.dtype() == ir::DataType::kFloat32 && t.num_elements() > 0) {
      auto v = t.values<float>();
      double sum = 0;
      for (float x : v) sum += x;
      absl::PrintF("  min %.6g  max %.6g  mean %.6g", *std::min_element(v.begin(), v.end()),
                   *std::max_element(v.begin(), v.end()), sum / v.size());
      if (t.rank() == 2) {
        std::vector<int64_t> top1;
        for (int64_t r = 0; r < std::min<int64_t>(t.dims()[0], 8); ++r) {
          auto row = v.subspan(r * t.dims()[1], t.dims()[1]);
          top1.push_back(std::max_element(row.begin(), row.end()) - row.begin());
        }
        absl::PrintF("  argmax(first rows) [%s]", absl::StrJoin(top1, ","));
      }
    }
    absl::PrintF("\n");
  }
}

struct Timing {
  double median_ms, min_ms, max_ms;
};

absl::StatusOr<Timing> TimeRuns(runtime::Executor& exec, const std::vector<NamedTensor>& inputs, int runs) {
  // Warm-up: at least 3 runs, and enough for the int8 conv units to tune between their two
  // engines (runtime/engine_tuner.h), so that the timed runs are the chosen engines'.
  const int warm_up = std::max(3, runtime::EngineTuner::CallsToChoose(2));
  for (int i = 0; i < warm_up; ++i) QFUSE_RETURN_IF_ERROR(exec.Run(inputs).status());
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    QFUSE_RETURN_IF_ERROR(exec.Run(inputs).status());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return Timing{ms[ms.size() / 2], ms.front(), ms.back()};
}

// --data mode: the model over a dataset, outputs summarised and optionally saved.
absl::Status RunDataset(const ir::Graph& graph, const runtime::ExecutorOptions& executor) {
  QFUSE_ASSIGN_OR_RETURN(data::DataSource defaults, ReaderDefaultsFromFlags());
  QFUSE_ASSIGN_OR_RETURN(auto sources, DataSourcesFromValues(absl::GetFlag(FLAGS_data), defaults));
  QFUSE_ASSIGN_OR_RETURN(auto data, data::OpenDataset(sources, graph, absl::GetFlag(FLAGS_data_samples)));
  pipeline::EvaluateOptions options;
  options.executor = executor;
  QFUSE_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outputs, pipeline::RunOnDataset(graph, *data, options));
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < outputs.size(); ++i) named.push_back({graph.outputs()[i]->name(), outputs[i]});
  PrintSummary(named);
  const std::string save = absl::GetFlag(FLAGS_save_outputs);
  if (!save.empty()) {
    const ir::Tensor& first = outputs[0];
    if (first.dtype() != ir::DataType::kFloat32) return absl::InvalidArgumentError("first output is not FLOAT");
    QFUSE_RETURN_IF_ERROR(base::WriteFileAtomically(
        ResolveUserPath(save), std::string(static_cast<const char*>(first.raw_data()), first.byte_size())));
    absl::PrintF("wrote %s: %s float32\n", save, ir::DimsToString(first.dims()));
  }
  return absl::OkStatus();
}

absl::Status Main() {
  const std::string path = ResolveUserPath(absl::GetFlag(FLAGS_model));
  QFUSE_ASSIGN_OR_RETURN(ir::Model model, ir::LoadModel(path));
  for (const std::string& note : model.notes) absl::PrintF("%s: %s\n", path, note);
  QFUSE_ASSIGN_OR_RETURN(fusion::FusionLevel level, fusion::ParseFusionLevel(absl::GetFlag(FLAGS_fusion)));
  QFUSE_RETURN_IF_ERROR(fusion::Fuse(&model, level).status());
  runtime::ExecutorOptions options;
  options.num_threads = absl::GetFlag(FLAGS_threads);
  options.integer_kernels = absl::GetFlag(FLAGS_integer_kernels);
  options.fold_clamps = absl::GetFlag(FLAGS_fold_clamps);
  QFUSE_ASSIGN_OR_RETURN(auto exec, runtime::Executor::Create(*model.graph, options));
  if (!absl::GetFlag(FLAGS_data).empty()) return RunDataset(*model.graph, options);
  if (!absl::GetFlag(FLAGS_bench)) {
    std::vector<NamedTensor> inputs;
    if (absl::GetFlag(FLAGS_inputs).empty()) {
      QFUSE_ASSIGN_OR_RETURN(inputs, SeededInputs(*model.graph, absl::GetFlag(FLAGS_batch)));
    } else {
      QFUSE_ASSIGN_OR_RETURN(inputs, ReadInputFiles(*model.graph, absl::GetFlag(FLAGS_inputs)));
    }
    QFUSE_ASSIGN_OR_RETURN(std::vector<NamedTensor> outputs, exec->Run(inputs));
    PrintSummary(outputs);
    absl::PrintF("peak activation memory: %.2f MiB\n", exec->peak_activation_bytes() / 1048576.0);
    return absl::OkStatus();
  }
  const int runs = std::max(1, absl::GetFlag(FLAGS_runs));
  absl::PrintF("model %s (fusion %s, %d nodes), %d threads, %d timed runs per setting, ISA %s (CPU has %s)\n", path,
               fusion::FusionLevelName(level), model.graph->num_nodes(), options.num_threads, runs,
               runtime::IsaName(runtime::MaxIsa()), runtime::IsaName(runtime::DetectedIsa()));
  if (exec->shape_arithmetic_nodes() > 0) {
    absl::PrintF("%d nodes of shape arithmetic computed once per input shape\n", exec->shape_arithmetic_nodes());
  }
  std::vector<int64_t> batches;
  for (const std::string& b : absl::GetFlag(FLAGS_batches)) {
    int64_t batch = 0;
    if (!absl::SimpleAtoi(b, &batch) || batch <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--batches: '", b, "' is not a positive batch size"));
    }
    batches.push_back(batch);
  }
  for (int64_t batch : batches) {
    QFUSE_ASSIGN_OR_RETURN(auto inputs, SeededInputs(*model.graph, batch));
    QFUSE_ASSIGN_OR_RETURN(Timing t, TimeRuns(*exec, inputs, runs));
    absl::PrintF("batch %3d: median %8.3f ms  min %8.3f ms  max %8.3f ms  throughput %9.1f samples/s  "
                 "peak activations %.2f MiB\n",
                 batch, t.median_ms, t.min_ms, t.max_ms, batch * 1000.0 / t.median_ms,
                 exec->peak_activation_bytes() / 1048576.0);
  }
  if (absl::GetFlag(FLAGS_profile)) {
    QFUSE_ASSIGN_OR_RETURN(auto inputs, SeededInputs(*model.graph, batches.back()));
    std::vector<std::pair<const ir::Node*, double>> times;
    runtime::RunOptions run_options;
    run_options.node_seconds = &times;
    for (int i = 0; i < runs; ++i) QFUSE_RETURN_IF_ERROR(exec->Run(inputs, run_options).status());
    std::map<std::string, std::pair<double, int>> by_op;
    double total = 0;
    for (const auto& [node, seconds] : times) {
      auto& entry = by_op[node->op_type()];
      entry.first += seconds / runs;
      entry.second += 1;
      total += seconds / runs;
    }
    absl::PrintF("profile at batch %d (mean of %d runs): %.3f ms in kernels\n", batches.back(), runs, total * 1e3);
    for (const auto& [op, entry] : by_op) {
      absl::PrintF("  %-24s %8.3f ms  %5.1f%%  (%d nodes)\n", op, entry.first * 1e3, 100 * entry.first / total,
                   entry.second / runs);
    }
    std::map<const ir::Node*, double> by_node;
    for (const auto& [node, seconds] : times) by_node[node] += seconds / runs;
    std::vector<std::pair<double, const ir::Node*>> slowest;
    for (const auto& [node, seconds] : by_node) slowest.emplace_back(seconds, node);
    std::sort(slowest.rbegin(), slowest.rend());
    const size_t top = std::min<size_t>(slowest.size(), std::max(0, absl::GetFlag(FLAGS_profile_top)));
    for (size_t i = 0; i < top; ++i) {
      const ir::Node& node = *slowest[i].second;
      const ir::Value* out = node.output(0);
      absl::PrintF("  %8.3f ms  %5.1f%%  %s %s -> %s\n", slowest[i].first * 1e3, 100 * slowest[i].first / total,
                   node.op_type(), node.name(), out == nullptr ? std::string("?") : out->type().ToString());
    }
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  absl::PrintF("peak resident memory of the process: %.1f MiB\n", usage.ru_maxrss / 1024.0);
  return absl::OkStatus();
}

}  // namespace
}  // namespace qfuse::tools

int main(int argc, char** argv) {
  return qfuse::tools::RunTool(argc, argv,
                               "Runs an ONNX model on the qfuse reference runtime.",
                               qfuse::tools::Main);
}
