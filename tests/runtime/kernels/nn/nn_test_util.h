// Test helpers for the nn kernels: build a one-node graph and run it on the executor.
#ifndef QFUSE_TESTS_RUNTIME_KERNELS_NN_NN_TEST_UTIL_H_
#define QFUSE_TESTS_RUNTIME_KERNELS_NN_NN_TEST_UTIL_H_

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace qfuse::runtime::nn_test {

using ir::DataType;
using ir::Tensor;

// One node input: a graph input bound at Run (`constant` false), a constant, or an
// omitted optional input (empty name).
struct NodeInput {
  std::string name;
  Tensor tensor;
  bool constant = false;
};

// Adds `op` with `inputs` and `num_outputs` outputs named y0, y1, ... to `graph` and marks
// them all graph outputs. Graph inputs have unknown shape, so any batch size binds.
inline absl::Status BuildOneNode(ir::Graph* graph, const std::string& op, const std::vector<NodeInput>& inputs,
                                 ir::AttributeMap attrs, int num_outputs) {
  std::vector<ir::Value*> values;
  for (const NodeInput& in : inputs) {
    if (in.name.empty()) {
      values.push_back(nullptr);
    } else if (in.constant) {
      QFUSE_ASSIGN_OR_RETURN(ir::Value * v, graph->AddConstant(in.name, in.tensor));
      values.push_back(v);
    } else {
      QFUSE_ASSIGN_OR_RETURN(ir::Value * v, graph->AddInput(in.name, ir::TensorType{in.tensor.dtype(), ir::Shape::Unknown(), {}}));
      values.push_back(v);
    }
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("y" + std::to_string(i));
  QFUSE_ASSIGN_OR_RETURN(ir::Node * node, graph->AddNode(op, op + "_node", values, outs, std::move(attrs)));
  for (ir::Value* out : node->outputs()) QFUSE_RETURN_IF_ERROR(graph->MarkOutput(out));
  return absl::OkStatus();
}

// Builds and runs the node once; returns its outputs.
inline absl::StatusOr<std::vector<Tensor>> RunNode(const std::string& op, const std::vector<NodeInput>& inputs,
                                                   ir::AttributeMap attrs = {}, int num_outputs = 1) {
  ir::Graph graph;
  QFUSE_RETURN_IF_ERROR(BuildOneNode(&graph, op, inputs, std::move(attrs), num_outputs));
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec, Executor::Create(graph));
  std::vector<NamedTensor> bound;
  for (const NodeInput& in : inputs) {
    if (!in.name.empty() && !in.constant) bound.push_back({in.name, in.tensor});
  }
  QFUSE_ASSIGN_OR_RETURN(std::vector<NamedTensor> results, exec->Run(bound));
  std::vector<Tensor> outs;
  for (NamedTensor& r : results) outs.push_back(std::move(r.tensor));
  return outs;
}

inline Tensor Floats(std::vector<int64_t> dims, std::vector<float> values) {
  return Tensor::FromVector<float>(std::move(dims), values);
}

inline Tensor Int64s(std::vector<int64_t> dims, std::vector<int64_t> values) {
  return Tensor::FromVector<int64_t>(std::move(dims), values);
}

inline ir::AttributeMap Attrs(std::vector<std::pair<std::string, ir::AttributeValue>> entries) {
  ir::AttributeMap map;
  for (auto& [name, value] : entries) map.Set(name, std::move(value));
  return map;
}

// Element-wise |actual - expected| <= 1e-5 + 1e-4 * |expected|, with matching shape.
inline void ExpectFloatsNear(const Tensor& actual, std::vector<int64_t> dims, const std::vector<float>& expected) {
  ASSERT_EQ(actual.dtype(), DataType::kFloat32);
  ASSERT_EQ(actual.dims(), dims);
  ASSERT_EQ(actual.num_elements(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.data<float>()[i], expected[i], 1e-5 + 1e-4 * std::abs(expected[i])) << "at index " << i;
  }
}

}  // namespace qfuse::runtime::nn_test

#endif  // QFUSE_TESTS_RUNTIME_KERNELS_NN_NN_TEST_UTIL_H_
