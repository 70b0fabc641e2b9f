// Runs a hand-built QDQ graph (tests/testing/qdq_graph.h) whose input is "x" on qfuse's runtime,
// with the integer kernels (the lowering) or simulated (the file's ops one by one, the
// reference): its first output's bytes and the op types of the graph that ran.
#ifndef QFUSE_TESTS_TESTING_QDQ_RUN_H_
#define QFUSE_TESTS_TESTING_QDQ_RUN_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "runtime/executor.h"

namespace qfuse::testing {

struct QdqRun {
  std::vector<uint8_t> bytes;
  std::map<std::string, int> ops;  // by op type, whatever the domain
};

inline absl::StatusOr<QdqRun> RunQdqGraph(const ir::Graph& graph, const ir::Tensor& x, bool integer,
                                          numerics::RequantizeMode mode) {
  runtime::ExecutorOptions options;
  options.integer_kernels = integer;
  options.requantize_mode = mode;
  QFUSE_ASSIGN_OR_RETURN(auto exec, runtime::Executor::Create(graph, options));
  QFUSE_ASSIGN_OR_RETURN(auto out, exec->Run({{"x", x}}));
  QdqRun run;
  const auto* bytes = static_cast<const uint8_t*>(out[0].tensor.raw_data());
  run.bytes.assign(bytes, bytes + out[0].tensor.num_elements());
  for (const ir::Node* n : exec->graph().nodes()) ++run.ops[n->op_type()];
  return run;
}

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_QDQ_RUN_H_
