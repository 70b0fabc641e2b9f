// One run of an integer graph with its kernels on oneDNN or on the hand-written ones, keeping
// every INT8 / UINT8 value the observer sees and every graph output: what the oneDNN integer
// tests compare byte for byte between the two.
#ifndef QFUSE_TESTS_RUNTIME_ONEDNN_INT8_VALUES_H_
#define QFUSE_TESTS_RUNTIME_ONEDNN_INT8_VALUES_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "numerics/requantize.h"
#include "runtime/executor.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {

// Values by name, graph outputs as "output:<name>". oneDNN is switched back on afterwards.
// With `runs` > 1 the same executor runs that many times (kernels that tune their engine on
// their first calls, engine_tuner.h, then run each engine), and every run must give the first
// run's bytes: otherwise an error names the run and the value.
inline absl::StatusOr<std::map<std::string, ir::Tensor>> RunInt8Values(
    const ir::Graph& graph, bool use_onednn, const std::vector<NamedTensor>& inputs,
    numerics::RequantizeMode mode = numerics::RequantizeMode::kOnnx, int runs = 1) {
  SetUseOneDnn(use_onednn);
  ExecutorOptions options;
  options.requantize_mode = mode;
  absl::StatusOr<std::unique_ptr<Executor>> exec = Executor::Create(graph, options);
  SetUseOneDnn(true);
  QFUSE_RETURN_IF_ERROR(exec.status());
  std::map<std::string, ir::Tensor> first;
  for (int k = 0; k < runs; ++k) {
    std::map<std::string, ir::Tensor> seen;
    RunOptions run;
    run.observer = [&](const ir::Value& v, const ir::Tensor& t) {
      if (t.dtype() == ir::DataType::kInt8 || t.dtype() == ir::DataType::kUint8) seen.emplace(v.name(), t);
    };
    QFUSE_ASSIGN_OR_RETURN(std::vector<NamedTensor> outputs, (*exec)->Run(inputs, run));
    for (NamedTensor& o : outputs) seen.emplace("output:" + o.name, std::move(o.tensor));
    if (k == 0) {
      first = std::move(seen);
      continue;
    }
    for (const auto& [name, t] : first) {
      auto it = seen.find(name);
      if (it == seen.end() || !it->second.BitwiseEqual(t)) {
        return absl::InternalError("run " + std::to_string(k + 1) + " gives other bytes for " + name);
      }
    }
  }
  return first;
}

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_TESTS_RUNTIME_ONEDNN_INT8_VALUES_H_
