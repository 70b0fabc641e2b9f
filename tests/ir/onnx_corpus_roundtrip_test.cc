// Imports every model of ONNX's own test corpus (Debian libonnx-testdata: node/ and
// pytorch-converted/). Each must load or be refused with a clear status naming the
// model and what is unsupported; each loaded model must survive export -> import with
// an identical graph and bit-identical weights.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/graph_compare.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

namespace fs = std::filesystem;

std::string TestDataRoot() {
  const char* env = std::getenv("QFUSE_ONNX_TESTDATA");
  return env != nullptr ? env : "/usr/share/libonnx-testdata/data";
}

std::vector<std::string> ModelPaths(const std::string& subdir) {
  std::vector<std::string> paths;
  const fs::path root = fs::path(TestDataRoot()) / subdir;
  for (const auto& entry : fs::directory_iterator(root)) {
    const fs::path model = entry.path() / "model.onnx";
    if (fs::exists(model)) paths.push_back(model.string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// The reason part of "<path>: <reason>", with node names cut so reasons group.
std::string ReasonKey(const absl::Status& status) {
  std::string msg(status.message());
  size_t colon = msg.find(": ");
  std::string reason = colon == std::string::npos ? msg : msg.substr(colon + 2);
  if (reason.rfind("node '", 0) == 0) reason = reason.substr(reason.find(')') + 1);
  return reason.substr(0, 70);
}

void RunCorpus(const std::string& subdir, int min_expected_models) {
  const std::vector<std::string> paths = ModelPaths(subdir);
  ASSERT_GE(static_cast<int>(paths.size()), min_expected_models)
      << "is libonnx-testdata installed? (tools/setup.sh)";
  int loaded = 0;
  std::map<std::string, int> refusals;
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    absl::StatusOr<Model> model = LoadModel(path);
    if (!model.ok()) {
      const absl::Status& s = model.status();
      // A refusal is a user-facing status naming the file, never an internal error.
      EXPECT_NE(s.code(), absl::StatusCode::kInternal) << s;
      EXPECT_NE(s.message().find(path), std::string::npos) << s;
      EXPECT_EQ(s.message().find('\n'), std::string::npos) << "multi-line message: " << s;
      ++refusals[ReasonKey(s)];
      continue;
    }
    ++loaded;
    absl::StatusOr<onnx::ModelProto> proto = ExportModel(*model);
    ASSERT_TRUE(proto.ok()) << proto.status();
    absl::StatusOr<Model> again = ImportModel(*std::move(proto), "", path + " (re-imported)");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->opset, model->opset);
    QFUSE_EXPECT_OK(CompareGraphs(*model->graph, *again->graph));
  }
  std::printf("%s: %zu models, %d loaded and round-tripped, %zu refused\n", subdir.c_str(), paths.size(), loaded,
              paths.size() - loaded);
  for (const auto& [reason, count] : refusals) std::printf("  refused %4d x %s\n", count, reason.c_str());
}

TEST(OnnxCorpusRoundTripTest, NodeTests) { RunCorpus("node", 900); }

TEST(OnnxCorpusRoundTripTest, PytorchConverted) { RunCorpus("pytorch-converted", 80); }

}  // namespace
}  // namespace qfuse::ir
