// How many nodes of each op type a graph holds: the tests' check of what a pass or the lowering
// left (keyed by op type alone, whatever the domain).
#ifndef QFUSE_TESTS_TESTING_OP_COUNTS_H_
#define QFUSE_TESTS_TESTING_OP_COUNTS_H_

#include <map>
#include <string>

#include "ir/graph.h"

namespace qfuse::testing {

inline std::map<std::string, int> OpCounts(const ir::Graph& g) {
  std::map<std::string, int> counts;
  for (const ir::Node* n : g.nodes()) ++counts[n->op_type()];
  return counts;
}

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_OP_COUNTS_H_
