// BN folding on every producer kind, each proven equal on the float runtime.
#include "fusion/passes/fold_batchnorm.h"

#include <map>

#include "fusion/equivalence.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::fusion {
namespace {

using testing::GraphBuilder;

using testing::OpCounts;

// Runs the BN passes and checks the result is equal to the original on random inputs.
void FoldAndCheck(GraphBuilder& b, int expected_bn_left, double tolerance = 2e-5) {
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  std::vector<PipelineStep> steps;
  steps.push_back({std::make_unique<FoldBatchNormPass>()});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto stats, RunPipeline(steps, &b.model()));
  EXPECT_EQ(OpCounts(b.graph())["BatchNormalization"], expected_bn_left);
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph()));
  EXPECT_GT(report.elements_compared, 0);
  EXPECT_LE(report.max_abs_diff, tolerance) << report.ToString();
}

TEST(FoldBatchNormTest, Conv2dGroupedWithBias) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 4, 6, 6});
  ir::Value* y = b.Op("Conv", {x, b.Random("w", {6, 2, 3, 3}), b.Random("bias", {6})}, "conv", {-1, 6, 6, 6},
                      GraphBuilder::Attrs({{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  b.Output(b.BatchNorm(y, 6, "bn", {-1, 6, 6, 6}));
  FoldAndCheck(b, 0);
  EXPECT_EQ(b.graph().num_nodes(), 1);
  EXPECT_EQ(b.graph().outputs()[0]->name(), "bn");  // output keeps its name
}

TEST(FoldBatchNormTest, Conv1dWithoutBiasAndDepthwise) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 10});
  ir::Value* y = b.Op("Conv", {x, b.Random("w", {3, 1, 3})}, "dw", {2, 3, 8}, GraphBuilder::Attrs({{"group", int64_t{3}}}));
  b.Output(b.BatchNorm(y, 3, "bn", {2, 3, 8}));
  FoldAndCheck(b, 0);
}

TEST(FoldBatchNormTest, Conv3d) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 4, 4, 4});
  ir::Value* y = b.Op("Conv", {x, b.Random("w", {3, 2, 2, 2, 2})}, "conv", {1, 3, 3, 3, 3});
  b.Output(b.BatchNorm(y, 3, "bn", {1, 3, 3, 3, 3}));
  FoldAndCheck(b, 0);
}

TEST(FoldBatchNormTest, ConvTransposeGroupedUsesItsWeightLayout) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 4, 3, 3});
  // W: [Cin=4, Cout/group=3, 2, 2], group 2 -> 6 output channels.
  ir::Value* y = b.Op("ConvTranspose", {x, b.Random("w", {4, 3, 2, 2}), b.Random("bias", {6})}, "deconv",
                      {1, 6, 6, 6}, GraphBuilder::Attrs({{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}}}));
  b.Output(b.BatchNorm(y, 6, "bn", {1, 6, 6, 6}));
  FoldAndCheck(b, 0);
}

TEST(FoldBatchNormTest, GemmTransBZeroAndOne) {
  for (int64_t trans_b : {0, 1}) {
    SCOPED_TRACE(trans_b);
    GraphBuilder b;
    ir::Value* x = b.Input("x", {3, 5});
    ir::Value* w = trans_b ? b.Random("w", {4, 5}) : b.Random("w", {5, 4});
    ir::Value* y = b.Op("Gemm", {x, w, b.Random("c", {4})}, "gemm", {3, 4},
                        GraphBuilder::Attrs({{"transB", trans_b}, {"alpha", 0.5f}, {"beta", 2.f}}));
    b.Output(b.BatchNorm(y, 4, "bn", {3, 4}));
    FoldAndCheck(b, 0);
  }
}

TEST(FoldBatchNormTest, LinearLayerMatMulAddAndBareMatMul) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {3, 5});
  ir::Value* mm = b.Op("MatMul", {x, b.Random("w", {5, 4})}, "mm", {3, 4});
  ir::Value* add = b.Op("Add", {b.Random("bias", {4}), mm}, "add", {3, 4});  // bias on the left
  ir::Value* bn = b.BatchNorm(add, 4, "bn", {3, 4});
  ir::Value* mm2 = b.Op("MatMul", {bn, b.Random("w2", {4, 2})}, "mm2", {3, 2});
  b.Output(b.BatchNorm(mm2, 2, "bn2", {3, 2}));
  FoldAndCheck(b, 0);
}

TEST(FoldBatchNormTest, SharedConvOutputIsNotFolded) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 2, 4, 4});
  ir::Value* y = b.Op("Conv", {x, b.Random("w", {3, 2, 1, 1})}, "conv", {1, 3, 4, 4});
  b.Output(b.BatchNorm(y, 3, "bn", {1, 3, 4, 4}));
  b.Output(b.Op("Relu", {y}, "relu", {1, 3, 4, 4}));
  FoldAndCheck(b, 1);
}

TEST(FoldBatchNormTest, StandaloneBatchNormBecomesScaleShift) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 3, 4, 4});
  ir::Value* r = b.Op("Relu", {x}, "relu", {-1, 3, 4, 4});
  b.Output(b.BatchNorm(r, 3, "bn", {-1, 3, 4, 4}));
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  QFUSE_ASSERT_OK_AND_ASSIGN(auto stats, Fuse(&b.model(), FusionLevel::kBn));
  auto counts = OpCounts(b.graph());
  EXPECT_EQ(counts["BatchNormalization"], 0);
  EXPECT_EQ(counts["Mul"], 1);
  EXPECT_EQ(counts["Add"], 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph()));
  EXPECT_LE(report.max_abs_diff, 1e-5) << report.ToString();
}

}  // namespace
}  // namespace qfuse::fusion
