// Helpers for the linalg kernel tests: run a one-node graph through the Executor,
// random tensors and element-wise comparison.
#ifndef QFUSE_TESTS_RUNTIME_KERNELS_LINALG_LINALG_TEST_UTIL_H_
#define QFUSE_TESTS_RUNTIME_KERNELS_LINALG_LINALG_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace qfuse::runtime::testing {

using ir::DataType;
using ir::Tensor;

// One node input: a graph input (bound at Run) or a constant; `omitted` leaves a hole.
struct Operand {
  std::string name;
  Tensor tensor;
  bool constant = false;
  bool omitted = false;
};

inline Operand In(std::string name, Tensor t) { return {std::move(name), std::move(t), false, false}; }
inline Operand Const(std::string name, Tensor t) { return {std::move(name), std::move(t), true, false}; }
inline Operand Omitted() { return {"", Tensor(), false, true}; }

// A graph with one node `op_type` over `operands` and its output "y"; inputs have
// unknown shape so any batch size can be bound.
struct OneNodeModel {
  std::unique_ptr<ir::Graph> graph;
  std::unique_ptr<Executor> executor;
  std::vector<NamedTensor> feeds;

  static absl::StatusOr<OneNodeModel> Create(const std::string& op_type, const std::vector<Operand>& operands,
                                             ir::AttributeMap attrs = {}) {
    OneNodeModel m;
    m.graph = std::make_unique<ir::Graph>();
    std::vector<ir::Value*> inputs;
    for (const Operand& op : operands) {
      if (op.omitted) {
        inputs.push_back(nullptr);
      } else if (op.constant) {
        QFUSE_ASSIGN_OR_RETURN(ir::Value * v, m.graph->AddConstant(op.name, op.tensor));
        inputs.push_back(v);
      } else {
        QFUSE_ASSIGN_OR_RETURN(ir::Value * v,
                               m.graph->AddInput(op.name, ir::TensorType{op.tensor.dtype(), ir::Shape::Unknown(), std::nullopt}));
        inputs.push_back(v);
        m.feeds.push_back({op.name, op.tensor});
      }
    }
    const std::vector<std::string> outs = {"y"};
    QFUSE_ASSIGN_OR_RETURN(ir::Node * node, m.graph->AddNode(op_type, "node", inputs, outs, std::move(attrs)));
    QFUSE_RETURN_IF_ERROR(m.graph->MarkOutput(node->output(0)));
    QFUSE_ASSIGN_OR_RETURN(m.executor, Executor::Create(*m.graph));
    return m;
  }

  absl::StatusOr<Tensor> Run(const std::vector<NamedTensor>& feeds) {
    QFUSE_ASSIGN_OR_RETURN(std::vector<NamedTensor> out, executor->Run(feeds));
    return std::move(out[0].tensor);
  }
  absl::StatusOr<Tensor> Run() { return Run(feeds); }
};

// Creates and runs the one-node model once.
inline absl::StatusOr<Tensor> RunNode(const std::string& op_type, const std::vector<Operand>& operands,
                                      ir::AttributeMap attrs = {}) {
  QFUSE_ASSIGN_OR_RETURN(OneNodeModel m, OneNodeModel::Create(op_type, operands, std::move(attrs)));
  return m.Run();
}

template <typename T = float>
Tensor Random(std::vector<int64_t> dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t(ir::DataTypeOf<T>::value, std::move(dims));
  for (T& v : t.mutable_values<T>()) v = static_cast<T>(dist(rng));
  return t;
}

inline Tensor Floats(std::vector<int64_t> dims, std::vector<float> values) {
  return Tensor::FromVector<float>(std::move(dims), values);
}

// Dims equal and every element within atol + rtol * |expected|.
template <typename T = float>
void ExpectNear(const Tensor& actual, const Tensor& expected, double rtol = 1e-4, double atol = 1e-5) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.dims(), expected.dims());
  auto a = actual.values<T>();
  auto e = expected.values<T>();
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_LE(std::abs(double(a[i]) - double(e[i])), atol + rtol * std::abs(double(e[i])))
        << "element " << i << ": got " << a[i] << ", expected " << e[i];
  }
}

}  // namespace qfuse::runtime::testing

#endif  // QFUSE_TESTS_RUNTIME_KERNELS_LINALG_LINALG_TEST_UTIL_H_
