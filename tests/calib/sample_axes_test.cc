// Sample axes: found from static shapes or from runs of one and two samples, on hand-made graphs
// whose values hold the samples first, second (sequence-first) or merged with another axis; and a
// sequence-first model's calibration table, the same at every batch size.
#include "calib/sample_axes.h"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "calib/calibrator.h"
#include "data/tensor_dataset.h"
#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::calib {
namespace {

// x [batch, 4, 3] -> Transpose -> t [4, batch, 3] -> MatMul by w [3, 3] -> y [4, batch, 3]
// -> Reshape to [-1, 3] -> m [4 * batch, 3]; t, y and m have no static shape.
void SequenceFirst(testing::GraphBuilder& b) {
  ir::Value* x = b.Input("x", {-1, 4, 3});
  ir::Value* t = b.Op("Transpose", {x}, "t", {}, b.Attrs({{"perm", std::vector<int64_t>{1, 0, 2}}}));
  ir::Value* y = b.Op("MatMul", {t, b.Random("w", {3, 3})}, "y");
  ir::Value* m = b.Op("Reshape", {y, b.Ints("shape", {-1, 3})}, "m");
  b.Output(y);
  b.Output(m);
}

// `n` samples of x [4, 3]; sample i scaled by 1 + 40 * (i % 7 == 3), so a few samples are far
// larger than the rest (what the sample-balanced counts weigh).
std::shared_ptr<const data::TensorSamples> Samples(int n) {
  auto samples = std::make_shared<data::TensorSamples>();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int i = 0; i < n; ++i) {
    ir::Tensor x(ir::DataType::kFloat32, {4, 3});
    const float scale = i % 7 == 3 ? 41.f : 1.f;
    for (float& v : x.mutable_values<float>()) v = scale * normal(rng);
    samples->push_back({{"x", x}});
  }
  return samples;
}

TEST(SampleAxesTest, FoundByRunsWhereShapesAreUnknown) {
  testing::GraphBuilder b;
  SequenceFirst(b);
  const ir::Graph& g = b.graph();
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, data::OpenTensorDataset(Samples(5), g, 0));
  const std::vector<const ir::Value*> values = {g.FindValue("x"), g.FindValue("t"), g.FindValue("y"), g.FindValue("m")};
  const runtime::ExecutorOptions exec;
  QFUSE_ASSERT_OK_AND_ASSIGN(const SampleAxes axes, FindSampleAxes(g, values, exec, *data));
  EXPECT_TRUE(axes.known);
  EXPECT_EQ(axes.axis.at(g.FindValue("x")), 0);
  EXPECT_EQ(axes.axis.at(g.FindValue("t")), 1);
  EXPECT_EQ(axes.axis.at(g.FindValue("y")), 1);
  EXPECT_EQ(axes.axis.count(g.FindValue("m")), 0u);  // [4 * batch, 3]: merged, none
  // SampleAxisOf: the axis where it holds the batch's count, -1 elsewhere.
  const ir::Tensor seq_first(ir::DataType::kFloat32, {4, 4, 3});  // seq 4, batch of 4
  EXPECT_EQ(SampleAxisOf(axes, g.FindValue("y"), seq_first, 4), 1);
  EXPECT_EQ(SampleAxisOf(axes, g.FindValue("y"), seq_first, 5), -1);
  EXPECT_EQ(SampleAxisOf(axes, g.FindValue("m"), seq_first, 4), -1);
  // Not found: the leading dim when it equals the count (the old rule, kept for fixed batches).
  const SampleAxes unknown;
  EXPECT_EQ(SampleAxisOf(unknown, g.FindValue("y"), seq_first, 4), 0);
  EXPECT_EQ(SampleAxisOf(unknown, g.FindValue("y"), seq_first, 3), -1);
  // One sample cannot show an axis.
  QFUSE_ASSERT_OK_AND_ASSIGN(auto one, data::OpenTensorDataset(Samples(1), g, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(const SampleAxes none, FindSampleAxes(g, values, exec, *one));
  EXPECT_FALSE(none.known);
}

TEST(SampleAxesTest, StaticBatchFirstShapesNeedNoRun) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 4, 3});
  ir::Value* y = b.Op("Relu", {x}, "y", {-1, 4, 3});
  b.Output(y);
  const ir::Graph& g = b.graph();
  // One sample: no run could find an axis, so the shapes did.
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, data::OpenTensorDataset(Samples(1), g, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(const SampleAxes axes, FindSampleAxes(g, {x, y}, runtime::ExecutorOptions(), *data));
  EXPECT_TRUE(axes.known);
  EXPECT_EQ(axes.axis.at(x), 0);
  EXPECT_EQ(axes.axis.at(y), 0);
}

// A model that runs only at batch 2 (a Reshape to a fixed [2, 12]): the probe's one-sample run
// fails, the axes are not found (the leading-dim rule), and calibration in batches of 2 works.
TEST(SampleAxesTest, AProbeThatCannotRunLeavesTheAxesNotFound) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 4, 3});
  ir::Value* r = b.Op("Reshape", {x, b.Ints("fixed", {2, 12})}, "r");
  ir::Value* y = b.Op("Relu", {r}, "y");
  b.Output(y);
  const ir::Graph& g = b.graph();
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, data::OpenTensorDataset(Samples(6), g, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(const SampleAxes axes, FindSampleAxes(g, {x, r, y}, runtime::ExecutorOptions(), *data));
  EXPECT_FALSE(axes.known);
  CalibrateOptions options;
  options.num_samples = 6;
  options.num_threads = 1;
  options.show_progress = false;
  options.batch_size = 2;
  QFUSE_ASSERT_OK_AND_ASSIGN(const CalibrationRun run, Calibrate(g, *data, options));
  EXPECT_EQ(run.table.tensors.size(), 3u);
}

TEST(SampleAxesTest, MoveAxisFirstByHand) {
  // [2, 3, 2]: v = 100 a + 10 b + c; axis 1 first gives [3, 2, 2] with out[b][a][c].
  ir::Tensor t(ir::DataType::kFloat32, {2, 3, 2});
  auto v = t.mutable_values<float>();
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      for (int c = 0; c < 2; ++c) v[(a * 3 + b) * 2 + c] = 100.f * a + 10.f * b + c;
    }
  }
  std::vector<float> out;
  MoveAxisFirst(t, 1, &out);
  const std::vector<float> want = {0, 1, 100, 101, 10, 11, 110, 111, 20, 21, 120, 121};
  EXPECT_EQ(out, want);
  MoveAxisFirst(t, 2, &out);
  const std::vector<float> last = {0, 10, 20, 100, 110, 120, 1, 11, 21, 101, 111, 121};
  EXPECT_EQ(out, last);
}

// A sequence-first model's table with the default method, whose squared-error scores read the
// sample-balanced counts: the same at batches 1, 2, 4 (where seq = 4 equals the batch's count)
// and 6. Before, [seq, batch, d] values were weighed as one sample per batch (or by rows of
// seq at batch 4), so the batching moved their thresholds. The merged [4 * batch, 3] value is
// still weighed per batch, and its threshold moves (calibrator.h names the exception).
TEST(SampleAxesTest, SequenceFirstTableDoesNotDependOnTheBatchSize) {
  testing::GraphBuilder b;
  SequenceFirst(b);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, data::OpenTensorDataset(Samples(24), b.graph(), 0));
  CalibrateOptions options;
  options.num_samples = 24;
  options.num_threads = 1;
  options.show_progress = false;
  options.batch_size = 3;
  QFUSE_ASSERT_OK_AND_ASSIGN(const CalibrationRun want, Calibrate(b.graph(), *data, options));
  for (const int64_t batch : {1, 2, 4, 6}) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch);
    options.batch_size = batch;
    QFUSE_ASSERT_OK_AND_ASSIGN(const CalibrationRun got, Calibrate(b.graph(), *data, options));
    ASSERT_EQ(got.table.tensors.size(), want.table.tensors.size());
    int compared = 0;
    for (size_t i = 0; i < want.table.tensors.size(); ++i) {
      const TensorRange& g = got.table.tensors[i];
      const TensorRange& w = want.table.tensors[i];
      if (w.name == "m") continue;
      SCOPED_TRACE(w.name);
      EXPECT_EQ(g.method, w.method);
      EXPECT_NEAR(g.threshold, w.threshold, 1e-6 * w.threshold);
      ++compared;
    }
    EXPECT_EQ(compared, 3);  // x, t, y
  }
}

}  // namespace
}  // namespace qfuse::calib
