// Runs one graph with kernels on oneDNN and on the hand-written kernels and compares
// every graph output and every observed value (plain layout) within float tolerance.
#ifndef QFUSE_TESTS_RUNTIME_ONEDNN_ENGINE_COMPARE_H_
#define QFUSE_TESTS_RUNTIME_ONEDNN_ENGINE_COMPARE_H_

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/random_inputs.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {

// Graph outputs and every observed value of one run, kernels chosen by `use_onednn`.
inline absl::StatusOr<std::map<std::string, ir::Tensor>> RunWith(const ir::Graph& g, bool use_onednn, int64_t batch) {
  SetUseOneDnn(use_onednn);
  QFUSE_ASSIGN_OR_RETURN(auto exec, Executor::Create(g));
  SetUseOneDnn(true);
  RandomInputOptions random;
  random.batch = batch;
  random.low = -1.f;
  QFUSE_ASSIGN_OR_RETURN(auto inputs, RandomInputs(g, random));
  std::map<std::string, ir::Tensor> seen;
  RunOptions options;
  options.observer = [&](const ir::Value& v, const ir::Tensor& t) { seen.emplace("observed:" + v.name(), t); };
  QFUSE_ASSIGN_OR_RETURN(auto outputs, exec->Run(inputs, options));
  for (NamedTensor& o : outputs) seen.emplace("output:" + o.name, std::move(o.tensor));
  return seen;
}

// Every value agrees within 2e-5 relative to the largest magnitude (at least 1).
inline void ExpectEnginesAgree(const ir::Graph& g, int64_t batch) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto want, RunWith(g, false, batch));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto got, RunWith(g, true, batch));
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    const ir::Tensor& t = got.at(name);
    ASSERT_EQ(t.dims(), w.dims()) << name;
    double max_diff = 0, max_abs = 0;
    for (int64_t i = 0; i < w.num_elements(); ++i) {
      max_diff = std::max(max_diff, std::fabs(double{t.data<float>()[i]} - w.data<float>()[i]));
      max_abs = std::max(max_abs, std::fabs(double{w.data<float>()[i]}));
    }
    EXPECT_LE(max_diff, 2e-5 * std::max(1.0, max_abs)) << name << " batch " << batch;
  }
}

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_TESTS_RUNTIME_ONEDNN_ENGINE_COMPARE_H_
