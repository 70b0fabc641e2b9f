// Test helper: runs a one-node graph on the reference runtime. Graph inputs have
// unknown shapes so the same graph can run with different (dynamic) batch sizes.
#ifndef QFUSE_TESTS_RUNTIME_KERNELS_ELEMENTWISE_ONE_NODE_H_
#define QFUSE_TESTS_RUNTIME_KERNELS_ELEMENTWISE_ONE_NODE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace qfuse::testing {

// One node input: a graph input (bound at Run) or a constant; `omitted` leaves the
// optional input out (nullptr).
struct NodeInput {
  ir::Tensor tensor;
  bool constant = false;
  bool omitted = false;
};

inline NodeInput In(ir::Tensor t) { return {std::move(t), false, false}; }
inline NodeInput Const(ir::Tensor t) { return {std::move(t), true, false}; }
inline NodeInput Omitted() { return {ir::Tensor(), false, true}; }

template <typename T>
ir::Tensor T1(std::vector<int64_t> dims, std::vector<T> values) {
  return ir::Tensor::FromVector<T>(std::move(dims), values);
}

// A built one-node graph and its executor, runnable many times.
class OneNode {
 public:
  static absl::StatusOr<std::unique_ptr<OneNode>> Create(const std::string& op, const std::vector<NodeInput>& inputs,
                                                         ir::AttributeMap attrs = {}, int num_outputs = 1) {
    std::unique_ptr<OneNode> n(new OneNode());
    std::vector<ir::Value*> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string name = absl::StrCat("in", i);
      if (inputs[i].omitted) {
        values.push_back(nullptr);
      } else if (inputs[i].constant) {
        QFUSE_ASSIGN_OR_RETURN(ir::Value * v, n->graph_.AddConstant(name, inputs[i].tensor));
        values.push_back(v);
      } else {
        ir::TensorType type;
        type.dtype = inputs[i].tensor.dtype();
        QFUSE_ASSIGN_OR_RETURN(ir::Value * v, n->graph_.AddInput(name, type));
        values.push_back(v);
        n->bound_.push_back({name, inputs[i].tensor});
      }
    }
    std::vector<std::string> outs;
    for (int i = 0; i < num_outputs; ++i) outs.push_back(absl::StrCat("out", i));
    QFUSE_ASSIGN_OR_RETURN(ir::Node * node, n->graph_.AddNode(op, "node", values, outs, std::move(attrs)));
    for (ir::Value* v : node->outputs()) QFUSE_RETURN_IF_ERROR(n->graph_.MarkOutput(v));
    QFUSE_ASSIGN_OR_RETURN(n->exec_, runtime::Executor::Create(n->graph_));
    return n;
  }

  // Runs with the tensors given at Create.
  absl::StatusOr<std::vector<ir::Tensor>> Run() { return Run(bound_); }

  // Runs with new values for the graph inputs ("in<i>" by node input number).
  absl::StatusOr<std::vector<ir::Tensor>> Run(const std::vector<ir::NamedTensor>& inputs) {
    QFUSE_ASSIGN_OR_RETURN(std::vector<ir::NamedTensor> outs, exec_->Run(inputs));
    std::vector<ir::Tensor> result;
    for (auto& o : outs) result.push_back(std::move(o.tensor));
    return result;
  }

 private:
  OneNode() = default;
  ir::Graph graph_;
  std::unique_ptr<runtime::Executor> exec_;
  std::vector<ir::NamedTensor> bound_;
};

// Creates and runs once.
inline absl::StatusOr<std::vector<ir::Tensor>> RunOneNode(const std::string& op, const std::vector<NodeInput>& inputs,
                                                          ir::AttributeMap attrs = {}, int num_outputs = 1) {
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<OneNode> n, OneNode::Create(op, inputs, std::move(attrs), num_outputs));
  return n->Run();
}

template <typename T>
std::vector<T> Values(const ir::Tensor& t) {
  std::vector<T> out;
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(p[i]);
  return out;
}

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_RUNTIME_KERNELS_ELEMENTWISE_ONE_NODE_H_
