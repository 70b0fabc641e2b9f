// The action every pattern of the QDQ lowering (runtime/int8/qdq_lowering.h) ends with: a
// matched DQ -> float ops -> Q group replaced by one integer node that reads the int8 values,
// takes the QuantizeLinear output's name and readers, and the name of one of the group's nodes.
#ifndef QFUSE_RUNTIME_INT8_GROUP_REPLACER_H_
#define QFUSE_RUNTIME_INT8_GROUP_REPLACER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "runtime/int8/qdq_lowering.h"
#include "runtime/int8/qdq_operands.h"

namespace qfuse::runtime::int8 {

// A matched group: the float ops it replaces (last first; the first computes the value the
// sink quantizes), where it ends, and the node whose name the integer op takes.
struct Group {
  std::vector<ir::NodeId> chain;
  Sink sink;
  ir::NodeId name_from = ir::kNoNode;
};

class Replacer {
 public:
  // `stats` (not owned) counts the nodes removed.
  Replacer(const LoweringOptions& options, LoweringStats* stats) : options_(options), stats_(stats) {}

  // Adds qfuse's integer node `op_type` (ir::kQfuseDomain, with the requantization mode as an
  // attribute) reading `inputs`, moves the sink's readers and output name to its output and
  // removes the sink's QuantizeLinear and the group's float ops.
  absl::Status Replace(ir::Graph* graph, const Group& group, const std::string& op_type,
                       const std::vector<ir::Value*>& inputs, ir::AttributeMap attrs) const;
  // The same with a standard ONNX op (default domain, `inputs` as its schema orders them).
  absl::Status ReplaceWithOnnxOp(ir::Graph* graph, const Group& group, const std::string& op_type,
                                 const std::vector<ir::Value*>& inputs) const;

  absl::Status Remove(ir::Graph* graph, ir::Node* node) const;

  const LoweringOptions& options() const { return options_; }

 private:
  absl::Status ReplaceWith(ir::Graph* graph, const Group& group, const std::string& op_type,
                           const std::vector<ir::Value*>& inputs, ir::AttributeMap attrs,
                           const std::string& domain) const;

  const LoweringOptions& options_;
  LoweringStats* stats_;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_GROUP_REPLACER_H_
