// Numerical equivalence of two float graphs (before and after a rewrite): both run on
// the same inputs and their outputs are compared (Glow's checkNumericalEquivalence).
#ifndef QFUSE_FUSION_EQUIVALENCE_H_
#define QFUSE_FUSION_EQUIVALENCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace qfuse::fusion {

struct EquivalenceOptions {
  // Input sets to run; when empty, `random_sets` seeded random sets are made.
  std::vector<std::vector<ir::NamedTensor>> input_sets;
  int random_sets = 2;
  int64_t batch = 2;  // for symbolic dims of random inputs
  uint32_t seed = 7;
  int num_threads = 2;
};

struct EquivalenceReport {
  double max_abs_diff = 0;  // over every output element of every set
  double max_rel_diff = 0;  // |a - b| / max(|a|, tiny), over elements with |a| > 1e-6
  std::string worst_output;
  int64_t elements_compared = 0;

  // abs <= atol + rtol * |before| for every element checked.
  bool Within(double atol, double rtol) const { return max_abs_diff <= atol || max_rel_diff <= rtol; }
  std::string ToString() const;
};

// Runs both graphs; outputs are matched by position and must agree in names, types
// and shapes (a mismatch is an error, not a difference).
absl::StatusOr<EquivalenceReport> CompareGraphsNumerically(const ir::Graph& before, const ir::Graph& after,
                                                           const EquivalenceOptions& options = {});

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_EQUIVALENCE_H_
