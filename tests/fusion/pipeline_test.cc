// The whole pipeline of each fusion level on the bundled sample models, proven equal to
// the unfused model on the stored test images; plus pipeline plumbing.
#include "fusion/pipeline.h"

#include <cstdio>
#include <map>

#include "fusion/equivalence.h"
#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::fusion {
namespace {

using testing::OpCounts;

class SampleModelPipelineTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SampleModelPipelineTest, EveryLevelIsEqualOnTheTestImages) {
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/" + GetParam()));
  const auto original = OpCounts(*tc.model.graph);
  ASSERT_GT(original.count("BatchNormalization"), 0u) << "sample models keep BN unfolded";
  int64_t previous_nodes = tc.model.graph->num_nodes() + 1;
  for (FusionLevel level : {FusionLevel::kNone, FusionLevel::kBn, FusionLevel::kFull}) {
    SCOPED_TRACE(FusionLevelName(level));
    ir::Model model;
    model.opset = tc.model.opset;
    model.graph = tc.model.graph->Clone();
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<PassStats> stats, Fuse(&model, level));
    std::printf("%s level %s: %zu passes\n", GetParam().c_str(), FusionLevelName(level).c_str(), stats.size());
    for (const PassStats& s : stats) {
      std::printf("  %-26s rewrites %4lld  nodes %4lld -> %4lld\n", s.pass.c_str(), static_cast<long long>(s.rewrites),
                  static_cast<long long>(s.nodes_before), static_cast<long long>(s.nodes_after));
    }
    const auto counts = OpCounts(*model.graph);
    EXPECT_LT(model.graph->num_nodes(), previous_nodes);
    previous_nodes = model.graph->num_nodes();
    if (level == FusionLevel::kNone) {
      EXPECT_EQ(counts, original);
    } else {
      EXPECT_EQ(counts.count("BatchNormalization"), 0u);
    }
    if (level == FusionLevel::kFull) {
      // Every Conv and Gemm is inside a unit.
      EXPECT_EQ(counts.count("Conv"), 0u);
      EXPECT_EQ(counts.count("Gemm"), 0u);
      EXPECT_EQ(counts.at(ir::kUnitOpType), original.at("Conv") + original.at("Gemm"));
    }
    EquivalenceOptions options;
    options.input_sets.push_back(tc.inputs);
    QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*tc.model.graph, *model.graph, options));
    std::printf("%s level %s: %lld nodes, %s\n", GetParam().c_str(), FusionLevelName(level).c_str(),
                static_cast<long long>(model.graph->num_nodes()), report.ToString().c_str());
    EXPECT_LE(report.max_abs_diff, 1e-4) << report.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SampleModelPipelineTest, ::testing::Values("resnet_small", "mobilenetv2_small"));

TEST(PipelineTest, DisabledPassesAreSkippedAndUnknownOnesRefused) {
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/resnet_small"));
  PipelineOptions options;
  options.disabled_passes = {"fold_batchnorm"};
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<PassStats> stats, Fuse(&tc.model, FusionLevel::kBn, options));
  for (const PassStats& s : stats) EXPECT_NE(s.pass, "fold_batchnorm");
  // BN could not fold, so it became per-channel Mul+Add instead.
  EXPECT_EQ(OpCounts(*tc.model.graph).count("BatchNormalization"), 0u);
  EXPECT_GT(OpCounts(*tc.model.graph).count("Mul"), 0u);
  options.disabled_passes = {"no_such_pass"};
  absl::StatusOr<std::vector<PassStats>> bad = Fuse(&tc.model, FusionLevel::kFull, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFusionLevel("partial").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace qfuse::fusion
