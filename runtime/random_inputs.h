// Seeded random inputs for a graph: what benchmarks and equivalence checks run on
// when no sample data is given.
#ifndef QFUSE_RUNTIME_RANDOM_INPUTS_H_
#define QFUSE_RUNTIME_RANDOM_INPUTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace qfuse::runtime {

struct RandomInputOptions {
  int64_t batch = 1;  // size given to symbolic or unknown dims not in symbol_sizes
  std::map<std::string, int64_t> symbol_sizes;  // size of named symbolic dims ("height" -> 224)
  uint32_t seed = 1;
  float low = 0.f;  // FLOAT inputs are uniform in [low, high)
  float high = 1.f;
};

// One tensor per graph input. FLOAT inputs only; other types and unknown ranks are an
// error naming the input.
absl::StatusOr<std::vector<NamedTensor>> RandomInputs(const ir::Graph& graph, const RandomInputOptions& options);

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_RANDOM_INPUTS_H_
