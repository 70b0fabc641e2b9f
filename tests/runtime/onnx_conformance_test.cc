// ONNX's own operator conformance cases (Debian libonnx-testdata, node/) run on the
// reference runtime and compared with ONNX's tolerance (rtol 1e-3, atol 1e-7; integer
// outputs exactly). Prints a per-operator table of passed / failed / skipped (with
// reason). Every case the runtime has kernels for must pass, except the training-mode
// Dropout cases whose expected outputs come from numpy's random mask (shape/dtype only).
//
// QFUSE_CONFORMANCE_OPS=Conv,Gemm restricts the run to those operators.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "runtime/executor.h"
#include "runtime/kernel_registry.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

namespace fs = std::filesystem;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

// Expected outputs drawn from numpy's random generator: no runtime can reproduce them.
const std::set<std::string>& RandomOutputCases() {
  static const auto* cases = new std::set<std::string>{
      "test_training_dropout", "test_training_dropout_default", "test_training_dropout_default_mask",
      "test_training_dropout_mask"};
  return *cases;
}

std::string NodeTestRoot() {
  const char* env = std::getenv("QFUSE_ONNX_TESTDATA");
  return std::string(env != nullptr ? env : "/usr/share/libonnx-testdata/data") + "/node";
}

// The operator a case tests: the last node of its graph; for *_expanded, its sibling's.
std::string OperatorOf(const std::string& root, std::string name) {
  const std::string suffix = "_expanded";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    name = name.substr(0, name.size() - suffix.size());
  }
  absl::StatusOr<std::string> bytes = base::ReadFileToString(root + "/" + name + "/model.onnx");
  onnx::ModelProto proto;
  if (!bytes.ok() || !proto.ParseFromString(*bytes) || proto.graph().node_size() == 0) return "?";
  return proto.graph().node(proto.graph().node_size() - 1).op_type();
}

struct Tally {
  int passed = 0;
  int failed = 0;
  std::map<std::string, int> skipped;  // reason -> count
};

TEST(OnnxConformanceTest, NodeCases) {
  const std::string root = NodeTestRoot();
  ASSERT_TRUE(fs::exists(root)) << root << " missing: run tools/setup.sh (libonnx-testdata)";
  absl::flat_hash_set<std::string> only;
  if (const char* env = std::getenv("QFUSE_CONFORMANCE_OPS")) {
    for (absl::string_view op : absl::StrSplit(env, ',', absl::SkipEmpty())) only.insert(std::string(op));
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());

  const KernelRegistry& registry = DefaultKernelRegistry();
  std::map<std::string, Tally> table;
  std::vector<std::string> failures;
  int ran = 0;
  for (const std::string& name : names) {
    const std::string op = OperatorOf(root, name);
    if (!only.empty() && !only.contains(op)) continue;
    Tally& tally = table[op];
    absl::StatusOr<testing::OnnxTestCase> tc = testing::LoadOnnxTestCase(root + "/" + name);
    if (!tc.ok()) {
      std::string msg(tc.status().message());
      ++tally.skipped["import: " + msg.substr(msg.find(": ") + 2, 60)];
      continue;
    }
    // A few upstream cases ship input files that contradict the model's declared inputs
    // (e.g. test_castlike_*_expanded: 'like' is FLOAT[1] for a BFLOAT16[3,4] input).
    std::string mismatch;
    for (size_t k = 0; k < tc->inputs.size(); ++k) {
      const ir::TensorType& declared = tc->model.graph->inputs()[k]->type();
      const ir::Tensor& data = tc->inputs[k].tensor;
      bool ok = declared.dtype == data.dtype() && (!declared.shape.rank_known || declared.shape.rank() == data.rank());
      for (int64_t d = 0; ok && declared.shape.rank_known && d < data.rank(); ++d) {
        ok = !declared.shape.dims[d].is_known() || declared.shape.dims[d].value == data.dims()[d];
      }
      if (!ok) mismatch = tc->inputs[k].name;
    }
    if (!mismatch.empty()) {
      ++tally.skipped["test data contradicts the declared type of input '" + mismatch + "'"];
      continue;
    }
    std::string missing;
    for (const ir::Node* node : tc->model.graph->nodes()) {
      if (registry.Find(*node) == nullptr) missing = node->op_type();
    }
    if (!missing.empty()) {
      ++tally.skipped["no kernel: " + missing];
      continue;
    }
    ++ran;
    absl::StatusOr<std::unique_ptr<Executor>> exec = Executor::Create(*tc->model.graph);
    absl::Status status = exec.status();
    absl::StatusOr<std::vector<NamedTensor>> outputs;
    if (status.ok()) {
      outputs = (*exec)->Run(tc->inputs);
      status = outputs.status();
    }
    if (status.ok()) {
      if (RandomOutputCases().count(name) > 0) {
        // Only shapes and dtypes are reproducible.
        for (size_t k = 0; k < tc->expected.size() && status.ok(); ++k) {
          const auto& e = tc->expected[k].tensor;
          const auto& a = (*outputs)[k].tensor;
          if (e.dtype() != a.dtype() || e.dims() != a.dims()) status = absl::InternalError("shape or dtype differs");
        }
      } else {
        status = testing::CompareOutputs(tc->expected, *outputs, kRtol, kAtol);
      }
    }
    if (status.ok()) {
      ++tally.passed;
    } else {
      ++tally.failed;
      failures.push_back(name + ": " + std::string(status.message()));
    }
  }

  int passed = 0, failed = 0, skipped = 0;
  std::string report = "| operator | passed | failed | skipped | skip reasons |\n|---|---:|---:|---:|---|\n";
  for (const auto& [op, t] : table) {
    int op_skipped = 0;
    std::string reasons;
    for (const auto& [reason, count] : t.skipped) {
      op_skipped += count;
      absl::StrAppendFormat(&reasons, "%s%d x %s", reasons.empty() ? "" : "; ", count, reason);
    }
    passed += t.passed;
    failed += t.failed;
    skipped += op_skipped;
    absl::StrAppendFormat(&report, "| %s | %d | %d | %d | %s |\n", op, t.passed, t.failed, op_skipped, reasons);
  }
  absl::StrAppendFormat(&report, "| **total** | %d | %d | %d | |\n", passed, failed, skipped);
  std::printf("%s\n", report.c_str());
  if (const char* out = std::getenv("QFUSE_CONFORMANCE_TABLE")) std::ofstream(out) << report;
  for (const std::string& f : failures) std::printf("FAILED %s\n", f.c_str());
  std::printf("%d passed, %d failed\n", passed, failed);
  EXPECT_GT(ran, 0);
  EXPECT_TRUE(failures.empty()) << failures.size() << " conformance cases failed (listed above)";
}

// The bundled sample models, stored in the same layout with PyTorch's logits for 100
// test images: logits within 1e-4 (max abs) and the same top-1 class for every image.
TEST(OnnxConformanceTest, SampleModelsReproducePytorch) {
  for (const char* name : {"resnet_small", "mobilenetv2_small"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<testing::OnnxTestCase> tc = testing::LoadOnnxTestCase(std::string("models/") + name);
    ASSERT_TRUE(tc.ok()) << tc.status();
    QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(*tc->model.graph));
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> outputs, exec->Run(tc->inputs));
    ASSERT_EQ(outputs.size(), 1u);
    const ir::Tensor& expected = tc->expected[0].tensor;
    const ir::Tensor& actual = outputs[0].tensor;
    ASSERT_EQ(expected.dims(), actual.dims());
    const double max_abs = testing::MaxAbsDifference(expected, actual);
    std::printf("%s: %lld images, max abs logit difference vs PyTorch %.3g\n", name,
                static_cast<long long>(expected.dims()[0]), max_abs);
    EXPECT_LE(max_abs, 1e-4);
    const int64_t classes = expected.dims()[1];
    for (int64_t i = 0; i < expected.dims()[0]; ++i) {
      auto e = expected.values<float>().subspan(i * classes, classes);
      auto a = actual.values<float>().subspan(i * classes, classes);
      EXPECT_EQ(std::max_element(e.begin(), e.end()) - e.begin(), std::max_element(a.begin(), a.end()) - a.begin())
          << "image " << i;
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime
