// Fuzz target: ONNX model bytes -> import (checker, shape inference, opset forms) ->
// verify -> executor (integer lowering when the model has Q/DQ) -> one run on random
// inputs -> fusion at level full -> one more run. Any outcome is fine except a crash, a
// sanitizer report or an output whose element count disagrees with its shape.
#include <string>
#include <utility>

#include "base/checked_math.h"
#include "fusion/pipeline.h"
#include "ir/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "tests/fuzz/fuzz_input.h"

namespace qfuse::fuzz {
namespace {

void RunOnce(const ir::Graph& graph) {
  runtime::ExecutorOptions options;
  options.num_threads = 1;
  absl::StatusOr<std::unique_ptr<runtime::Executor>> exec = runtime::Executor::Create(graph, options);
  if (!exec.ok()) return;
  absl::StatusOr<std::vector<ir::NamedTensor>> inputs = runtime::RandomInputs(graph, {});
  if (!inputs.ok()) return;
  absl::StatusOr<std::vector<ir::NamedTensor>> outputs = (*exec)->Run(*inputs);
  if (!outputs.ok()) {
    Check(!outputs.status().message().empty(), "an error without a message");
    return;
  }
  for (const ir::NamedTensor& out : *outputs) {
    absl::StatusOr<int64_t> count = base::CheckedElementCount(out.tensor.dims(), out.name);
    Check(count.ok() && *count == out.tensor.num_elements(), "an output's element count disagrees with its dims");
  }
}

}  // namespace
}  // namespace qfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool initialised = (qfuse::fuzz::InitFuzzProcess(), true);
  (void)initialised;
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<qfuse::ir::Model> model = qfuse::ir::ImportModel(std::move(proto), "", "fuzz.onnx");
  if (!model.ok()) return 0;
  qfuse::fuzz::RunOnce(*model->graph);
  if (qfuse::fusion::Fuse(&*model, qfuse::fusion::FusionLevel::kFull).ok()) qfuse::fuzz::RunOnce(*model->graph);
  return 0;
}
