// Sample axes: found from static shapes or from runs of one and two samples, on hand-made graphs
// whose values hold the samples first, second (sequence-first) or merged with another axis; and a
// sequence-first model's calibration table, the same at every batch size.
#include "calib/sample_axes.h"

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "calib/calibrator.h"
#include "data/tensor_dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::calib {
namespace {

// x [batch, 4, 3] -> Transpose -> t [4, batch, 3] -> MatMul by w [3, 3] -> y [4, batch, 3]
// -> Reshape to [-1, 3] -> m [4 * batch, 3] (merged seq-major: row s * batch + b); and
// x -> Reshape to [-1, 3] -> r -> MatMul by v [3, 3] -> p [batch * 4, 3] (merged sample-major:
// row b * 4 + s, as attention's [batch x heads, ...]); and t -> Reshape to [4, -1] -> c -> Mul
// by itself -> e [4, batch * 3] (merged sample-major on axis 1: column b * 3 + d); t, y, m, r,
// p, c and e have no static shape.
void SequenceFirst(testing::GraphBuilder& b) {
  ir::Value* x = b.Input("x", {-1, 4, 3});
  ir::Value* t = b.Op("Transpose", {x}, "t", {}, b.Attrs({{"perm", std::vector<int64_t>{1, 0, 2}}}));
  ir::Value* y = b.Op("MatMul", {t, b.Random("w", {3, 3})}, "y");
  ir::Value* m = b.Op("Reshape", {y, b.Ints("shape", {-1, 3})}, "m");
  ir::Value* r = b.Op("Reshape", {x, b.Ints("rows", {-1, 3})}, "r");
  ir::Value* p = b.Op("MatMul", {r, b.Random("v", {3, 3})}, "p");
  ir::Value* c = b.Op("Reshape", {t, b.Ints("cols", {4, -1})}, "c");  // [4, batch * 3]: axis 1 sample-major
  ir::Value* e = b.Op("Mul", {c, c}, "e");
  b.Output(y);
  b.Output(m);
  b.Output(p);
  b.Output(e);
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
  const std::vector<const ir::Value*> values = {g.FindValue("x"), g.FindValue("t"), g.FindValue("y"),
                                                g.FindValue("m"), g.FindValue("p"), g.FindValue("e")};
  const runtime::ExecutorOptions exec;
  QFUSE_ASSERT_OK_AND_ASSIGN(const SampleAxes axes, FindSampleAxes(g, values, exec, *data));
  EXPECT_TRUE(axes.known);
  const auto where = [&](const char* name) { return axes.axis.at(g.FindValue(name)); };
  EXPECT_EQ(where("x").axis, 0);
  EXPECT_EQ(where("x").slices, 1);
  EXPECT_EQ(where("t").axis, 1);
  EXPECT_EQ(where("y").axis, 1);
  EXPECT_EQ(where("y").slices, 1);
  EXPECT_EQ(where("m").axis, 0);  // [4 * batch, 3]: merged seq-major
  EXPECT_EQ(where("m").slices, 4);
  EXPECT_FALSE(where("m").sample_major);
  EXPECT_EQ(where("p").axis, 0);  // [batch * 4, 3]: merged sample-major
  EXPECT_EQ(where("p").slices, 4);
  EXPECT_TRUE(where("p").sample_major);
  EXPECT_EQ(where("e").axis, 1);  // [4, batch * 3]: merged sample-major on axis 1
  EXPECT_EQ(where("e").slices, 3);
  EXPECT_TRUE(where("e").sample_major);
  // SampleViewOf: the dims with the samples on an axis of their own, none where the count
  // does not fit.
  using View = std::pair<std::vector<int64_t>, int>;
  const auto view = [](const std::optional<SampleView>& v) {
    return v.has_value() ? View{v->dims, v->axis} : View{{}, -1};
  };
  const ir::Tensor seq_first(ir::DataType::kFloat32, {4, 4, 3});  // seq 4, batch of 4
  EXPECT_EQ(view(SampleViewOf(axes, g.FindValue("y"), seq_first, 4)), (View{{4, 4, 3}, 1}));
  EXPECT_EQ(view(SampleViewOf(axes, g.FindValue("y"), seq_first, 5)), (View{{}, -1}));
  const ir::Tensor merged(ir::DataType::kFloat32, {20, 3});  // 5 samples of 4 rows
  EXPECT_EQ(view(SampleViewOf(axes, g.FindValue("p"), merged, 5)), (View{{5, 4, 3}, 0}));
  EXPECT_EQ(view(SampleViewOf(axes, g.FindValue("m"), merged, 5)), (View{{4, 5, 3}, 1}));
  EXPECT_EQ(view(SampleViewOf(axes, g.FindValue("p"), merged, 4)), (View{{}, -1}));
  const ir::Tensor wide(ir::DataType::kFloat32, {4, 15});  // 5 samples of 3 columns
  EXPECT_EQ(view(SampleViewOf(axes, g.FindValue("e"), wide, 5)), (View{{4, 5, 3}, 1}));
  // Not found: the leading dim when it equals the count (the old rule, kept for fixed batches).
  const SampleAxes unknown;
  EXPECT_EQ(view(SampleViewOf(unknown, g.FindValue("y"), seq_first, 4)), (View{{4, 4, 3}, 0}));
  EXPECT_EQ(view(SampleViewOf(unknown, g.FindValue("y"), seq_first, 3)), (View{{}, -1}));
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
  EXPECT_EQ(axes.axis.at(x).axis, 0);
  EXPECT_EQ(axes.axis.at(y).axis, 0);
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
  MoveAxisFirst(t.values<float>(), t.dims(), 1, &out);
  const std::vector<float> want = {0, 1, 100, 101, 10, 11, 110, 111, 20, 21, 120, 121};
  EXPECT_EQ(out, want);
  MoveAxisFirst(t.values<float>(), t.dims(), 2, &out);
  const std::vector<float> last = {0, 10, 20, 100, 110, 120, 1, 11, 21, 101, 111, 121};
  EXPECT_EQ(out, last);
}

// A sequence-first model's table with the default method, whose squared-error scores read the
// sample-balanced counts: the same at batches 1, 2, 4 (where seq = 4 equals the batch's count)
// and 6. Before, [seq, batch, d] values were weighed as one sample per batch (or by rows of
// seq at batch 4), and so were the merged [4 * batch, 3] and [batch * 4, 3] values: the
// batching moved their thresholds.
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
      SCOPED_TRACE(w.name);
      EXPECT_EQ(g.method, w.method);
      EXPECT_NEAR(g.threshold, w.threshold, 1e-6 * w.threshold);
      ++compared;
    }
    EXPECT_EQ(compared, 8);  // x, t, y, m, r, p, c, e
  }
}

// NaN / Inf names its sample along the value's own sample axis: sample 4 of six in one batch
// (its x positive but for one element, at [2, 1]) reaches Sqrt as row 4 * 4 + 2 of a
// sample-major merged [batch * 4, 3] value, as column 4 of a sequence-first [4, batch, 3] one
// and as row 2 * 6 + 4 of a seq-major merged [4 * batch, 3] one.
TEST(SampleAxesTest, NonFiniteValuesNameTheirSample) {
  for (const std::string form : {"sample-major", "sequence-first", "seq-major"}) {
    SCOPED_TRACE(form);
    testing::GraphBuilder b;
    ir::Value* x = b.Input("x", {-1, 4, 3});
    const auto transpose = b.Attrs({{"perm", std::vector<int64_t>{1, 0, 2}}});
    ir::Value* shaped = nullptr;
    if (form == "sample-major") {
      shaped = b.Op("Reshape", {x, b.Ints("rows", {-1, 3})}, "shaped");
    } else if (form == "sequence-first") {
      shaped = b.Op("Transpose", {x}, "shaped", {}, transpose);
    } else {
      ir::Value* t = b.Op("Transpose", {x}, "t", {}, transpose);
      shaped = b.Op("Reshape", {t, b.Ints("rows", {-1, 3})}, "shaped");
    }
    b.Output(b.Op("Sqrt", {shaped}, "root"));
    auto samples = std::make_shared<data::TensorSamples>();
    for (int i = 0; i < 6; ++i) {
      ir::Tensor s(ir::DataType::kFloat32, {4, 3});
      auto v = s.mutable_values<float>();
      for (int k = 0; k < 12; ++k) v[k] = 1.f + 0.5f * k + i;
      if (i == 4) v[2 * 3 + 1] = -1.f;
      samples->push_back({{"x", s}});
    }
    QFUSE_ASSERT_OK_AND_ASSIGN(auto data, data::OpenTensorDataset(samples, b.graph(), 0));
    CalibrateOptions options;
    options.num_samples = 6;
    options.num_threads = 1;
    options.show_progress = false;
    options.batch_size = 6;
    const absl::StatusOr<CalibrationRun> run = Calibrate(b.graph(), *data, options);
    ASSERT_FALSE(run.ok());
    EXPECT_THAT(std::string(run.status().message()),
                ::testing::HasSubstr("tensor 'root' has NaN or Inf in sample 4 ("));
  }
}

}  // namespace
}  // namespace qfuse::calib
