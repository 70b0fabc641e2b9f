// Calibration of a fused sample model on Fashion-MNIST training images: every quantized
// value gets a threshold within its observed range, the table is deterministic, and bad
// data is reported by tensor and sample.
#include "calib/calibrator.h"

#include <cmath>

#include "base/file_util.h"
#include "base/status_macros.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "ir/onnx_import.h"
#include "ir/reader_saturation.h"
#include "ir/value_sign.h"
#include "numerics/threshold_scale.h"
#include "tests/data/dataset_fixtures.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::calib {
namespace {

constexpr char kTrainImages[] = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

absl::StatusOr<std::unique_ptr<data::Dataset>> FashionMnist(const ir::Graph& graph, int64_t n) {
  data::DataSource source;
  source.path = kTrainImages;
  return data::OpenDataset({source}, graph, n);
}

// The ResNet-style sample fused at `level`.
absl::StatusOr<ir::Model> FusedResnet(fusion::FusionLevel level) {
  QFUSE_ASSIGN_OR_RETURN(ir::Model model, ir::LoadModel("models/resnet_small/model.onnx"));
  QFUSE_RETURN_IF_ERROR(fusion::Fuse(&model, level).status());
  return model;
}

CalibrateOptions QuietOptions(int64_t samples) {
  CalibrateOptions options;
  options.num_samples = samples;
  options.show_progress = false;
  return options;
}

TEST(CalibratorTest, FusedResnetOnFashionMnist) {
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, FusedResnet(fusion::FusionLevel::kFull));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, FashionMnist(*model.graph, 64));
  CalibrateOptions options = QuietOptions(64);
  options.batch_size = 16;
  const auto observed = ObservedValues(*model.graph);
  const auto residuals = ResidualValues(*model.graph);
  EXPECT_EQ(residuals.size(), 4u);  // the four ResNet blocks' shortcuts
  for (CalibrationMethod method : {CalibrationMethod::kEntropy, CalibrationMethod::kMax}) {
    SCOPED_TRACE(CalibrationMethodName(method));
    options.threshold.method = method;
    QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationRun run, Calibrate(*model.graph, *data, options));
    ASSERT_EQ(run.table.tensors.size(), observed.size());
    EXPECT_EQ(run.table.samples, 64);
    int saturated = 0;
    for (const ir::Value* v : observed) {
      const TensorRange* r = run.table.Find(v->name());
      ASSERT_NE(r, nullptr) << v->name();
      const float max_abs = std::max(std::fabs(r->min), std::fabs(r->max));
      EXPECT_GT(r->threshold, 0) << v->name();
      // Saturated thresholds never exceed the range; max is the range (to a bin).
      EXPECT_LE(r->threshold, max_abs * 1.001f) << v->name();
      if (method == CalibrationMethod::kMax) {
        EXPECT_NEAR(r->threshold, max_abs, max_abs * 1e-3) << v->name();
      }
      EXPECT_EQ(r->scale, r->threshold / 127.f);
      saturated += r->threshold < 0.9f * max_abs;
    }
    // Residual operands are never saturated; with entropy other tensors are.
    for (const ir::Value* v : residuals) {
      const TensorRange* r = run.table.Find(v->name());
      EXPECT_NEAR(r->threshold, std::max(std::fabs(r->min), std::fabs(r->max)), 1e-3 * r->max) << v->name();
    }
    if (method == CalibrationMethod::kEntropy) {
      EXPECT_GT(saturated, 0);
    }
    // The input is pixel/255: exactly [0, 1].
    EXPECT_EQ(run.table.Find("input")->min, 0.f);
    EXPECT_EQ(run.table.Find("input")->max, 1.f);
    // Histograms: 4096 counters per observed value, whatever the sample count.
    EXPECT_EQ(run.histogram_bytes, static_cast<int64_t>(observed.size() * 4096 * sizeof(int64_t)));
    // Deterministic.
    QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationRun again, Calibrate(*model.graph, *data, options));
    EXPECT_EQ(ToJson(again.table), ToJson(run.table));
  }
}

// The same 64 images in batches of 1, 5, 16 and 64 (each batching's first batch has its own
// max): the same thresholds, with the default method (auto) and entropy. A histogram's grid is
// the smallest power of two covering all its values (histogram.h), so batching cannot move a
// threshold; what may differ is the values themselves: a kernel may round differently at
// another batch size (under the scalar cap the last Gemm's outputs at batch 1 differ from batch
// 16's in the last bit), and a `max` threshold or a value's extremes follow. So thresholds and
// extremes are compared to 1e-6 of them; another grid moves a threshold by a bin (1/4096 of the
// range or more).
TEST(CalibratorTest, TheTableDoesNotDependOnTheBatchSize) {
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, FusedResnet(fusion::FusionLevel::kFull));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, FashionMnist(*model.graph, 64));
  for (CalibrationMethod method : {CalibrationMethod::kAuto, CalibrationMethod::kEntropy}) {
    SCOPED_TRACE(CalibrationMethodName(method));
    CalibrateOptions options = QuietOptions(64);
    options.threshold.method = method;
    options.batch_size = 16;
    QFUSE_ASSERT_OK_AND_ASSIGN(const CalibrationRun want, Calibrate(*model.graph, *data, options));
    for (const int64_t batch : {1, 5, 64}) {
      SCOPED_TRACE(::testing::Message() << "batch " << batch);
      options.batch_size = batch;
      QFUSE_ASSERT_OK_AND_ASSIGN(const CalibrationRun got, Calibrate(*model.graph, *data, options));
      ASSERT_EQ(got.table.tensors.size(), want.table.tensors.size());
      for (size_t i = 0; i < want.table.tensors.size(); ++i) {
        const TensorRange& g = got.table.tensors[i];
        const TensorRange& w = want.table.tensors[i];
        SCOPED_TRACE(w.name);
        EXPECT_EQ(g.name, w.name);
        EXPECT_EQ(g.method, w.method);
        EXPECT_NEAR(g.threshold, w.threshold, 1e-6 * w.threshold);
        EXPECT_NEAR(g.min, w.min, 1e-6 * std::fabs(w.min));
        EXPECT_NEAR(g.max, w.max, 1e-6 * std::fabs(w.max));
      }
    }
  }
}

CalibrateOptions EightSamplesInBatchesOfFour() {
  CalibrateOptions options = QuietOptions(8);
  options.batch_size = 4;
  return options;
}

// The unsigned grid searches 256 levels on exactly the tensors it covers: every other
// threshold is the symmetric search's, bit for bit, and most covered ones move (MSE weighs
// rounding against clipping, and twice the levels halve the rounding).
TEST(CalibratorTest, UnsignedGridSearchesOnlyItsTensorsOver256Levels) {
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, FusedResnet(fusion::FusionLevel::kNone));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, FashionMnist(*model.graph, 32));
  CalibrateOptions options = QuietOptions(32);
  options.threshold.method = CalibrationMethod::kMse;
  QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationRun symmetric, Calibrate(*model.graph, *data, options));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::ValueLowerBounds non_negative, ir::NonNegativeValues(*model.graph));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::ValueLowerBounds bounded, ir::LowerBounds(*model.graph));
  for (UnsignedGrid grid : {UnsignedGrid::kNonNegativeByConstruction, UnsignedGrid::kBoundedBelowByConstruction,
                            UnsignedGrid::kObservedNonNegative}) {
    options.unsigned_grid = grid;
    QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationRun run, Calibrate(*model.graph, *data, options));
    int covered = 0, moved = 0;
    for (const TensorRange& r : run.table.tensors) {
      const TensorRange* s = symmetric.table.Find(r.name);
      ASSERT_NE(s, nullptr) << r.name;
      const ir::Value* v = model.graph->FindValue(r.name);
      const bool is_covered = grid == UnsignedGrid::kObservedNonNegative          ? r.min >= 0
                              : grid == UnsignedGrid::kNonNegativeByConstruction ? non_negative.contains(v)
                                                                                 : bounded.contains(v);
      if (!is_covered) {
        EXPECT_EQ(r.threshold, s->threshold) << r.name;
        continue;
      }
      ++covered;
      moved += r.threshold != s->threshold;
    }
    EXPECT_GT(covered, 5);
    EXPECT_GT(2 * moved, covered);
  }
}

// --activation_headroom: every threshold the method chose, times the factor (in double, then
// rounded to float), and the scale of that threshold; a factor that is not positive is refused.
TEST(CalibratorTest, HeadroomMultipliesEveryChosenThreshold) {
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, FusedResnet(fusion::FusionLevel::kFull));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, FashionMnist(*model.graph, 16));
  CalibrateOptions options = QuietOptions(16);
  QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationRun plain, Calibrate(*model.graph, *data, options));
  options.activation_headroom = 1.65;
  QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationRun wide, Calibrate(*model.graph, *data, options));
  ASSERT_EQ(wide.table.tensors.size(), plain.table.tensors.size());
  ASSERT_GT(plain.table.tensors.size(), 5u);
  for (size_t i = 0; i < plain.table.tensors.size(); ++i) {
    const TensorRange& p = plain.table.tensors[i];
    const TensorRange& w = wide.table.tensors[i];
    ASSERT_EQ(w.name, p.name);
    EXPECT_EQ(w.method, p.method) << p.name;
    EXPECT_EQ(w.min, p.min) << p.name;
    EXPECT_EQ(w.max, p.max) << p.name;
    EXPECT_EQ(w.threshold, static_cast<float>(double{p.threshold} * 1.65)) << p.name;
    EXPECT_EQ(w.scale, numerics::ScaleOfThreshold(w.threshold, numerics::kInt8SymmetricMax)) << p.name;
  }
  for (double bad : {0.0, -1.0, std::nan("")}) {
    options.activation_headroom = bad;
    absl::StatusOr<CalibrationRun> run = Calibrate(*model.graph, *data, options);
    ASSERT_FALSE(run.ok()) << bad;
    EXPECT_NE(run.status().message().find("--activation_headroom must be a positive factor"), std::string::npos)
        << run.status();
  }
}

// A value that only saturating ops read keeps no threshold above their bound
// (ir/reader_saturation.h): the method's threshold (max: the observed max) is lowered to it,
// after the headroom, and the table names the reader; a value another op reads too keeps its own.
TEST(CalibratorTest, ThresholdsStopAtTheSaturatingReadersBound) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("input", {-1, 1, 28, 28});  // Fashion-MNIST pixels in [0, 1]
  ir::Value* logits = b.Op("Mul", {x, b.Floats("forty", {}, {40.f})}, "logits", {-1, 1, 28, 28});
  b.Output(b.Op("Sigmoid", {logits}, "prob", {-1, 1, 28, 28}));
  ir::Value* wide = b.Op("Mul", {x, b.Floats("twenty", {}, {20.f})}, "wide", {-1, 1, 28, 28});
  b.Output(b.Op("Clip", {wide, b.Floats("zero", {}, {0.f}), b.Floats("six", {}, {6.f})}, "relu6", {-1, 1, 28, 28}));
  b.Output(b.Op("Tanh", {wide}, "tanh", {-1, 1, 28, 28}));
  ir::Value* open = b.Op("Mul", {x, b.Floats("thirty", {}, {30.f})}, "open", {-1, 1, 28, 28});
  b.Output(b.Op("Sigmoid", {open}, "open_prob", {-1, 1, 28, 28}));
  b.Output(b.Op("Relu", {open}, "open_relu", {-1, 1, 28, 28}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, FashionMnist(b.graph(), 8));
  CalibrateOptions options = EightSamplesInBatchesOfFour();
  options.threshold.method = CalibrationMethod::kMax;
  options.bound_by_readers = false;
  QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationRun unbounded, Calibrate(b.graph(), *data, options));
  for (const char* name : {"logits", "wide", "open"}) {
    const TensorRange* r = unbounded.table.Find(name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_EQ(r->threshold, r->max) << name;  // max: the observed max, no pixel of the 8 is 0 everywhere
    EXPECT_EQ(r->bounded_by, "") << name;
  }
  ASSERT_GT(unbounded.table.Find("logits")->threshold, 39.f);
  ASSERT_GT(unbounded.table.Find("wide")->threshold, 19.f);
  for (double headroom : {1.0, 2.0}) {
    options.bound_by_readers = true;
    options.activation_headroom = headroom;
    QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationRun bounded, Calibrate(b.graph(), *data, options));
    const TensorRange* logits_range = bounded.table.Find("logits");
    const TensorRange* wide_range = bounded.table.Find("wide");
    const TensorRange* open_range = bounded.table.Find("open");
    EXPECT_EQ(logits_range->threshold, ir::kSigmoidSaturation);
    EXPECT_EQ(logits_range->bounded_by, "Sigmoid");
    EXPECT_EQ(logits_range->scale, numerics::ScaleOfThreshold(ir::kSigmoidSaturation, numerics::kInt8SymmetricMax));
    EXPECT_EQ(wide_range->threshold, 6.f);  // Clip's 6 above Tanh's 3.47
    EXPECT_EQ(wide_range->bounded_by, "Clip");
    EXPECT_EQ(open_range->threshold,
              static_cast<float>(double{unbounded.table.Find("open")->threshold} * headroom));  // Relu reads it too
    EXPECT_EQ(open_range->bounded_by, "");
  }
}

TEST(CalibratorTest, NanInAnActivationNamesTensorAndSamples) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("input", {-1, 1, 28, 28});
  // log(x - 0.5) is NaN for dark pixels.
  ir::Value* shifted = b.Op("Sub", {x, b.Floats("half", {}, {0.5f})}, "shifted", {-1, 1, 28, 28});
  b.Output(b.Op("Sqrt", {shifted}, "root", {-1, 1, 28, 28}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, FashionMnist(b.graph(), 8));
  absl::StatusOr<CalibrationRun> run = Calibrate(b.graph(), *data, EightSamplesInBatchesOfFour());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("tensor 'root' has NaN or Inf in sample 0"), std::string::npos)
      << run.status();
  EXPECT_NE(run.status().message().find("train-images-idx3-ubyte.gz sample 0"), std::string::npos) << run.status();
}

// Only sample 5 of 8 holds a NaN: the error names that sample, not its batch (4..7).
TEST(CalibratorTest, NanInOneSampleNamesThatSample) {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("input", {-1, 4});
  b.Output(b.Op("Relu", {x}, "relu", {-1, 4}));
  std::vector<float> values(8 * 4, 0.25f);
  values[5 * 4 + 2] = std::nanf("");
  const std::string path = ::testing::TempDir() + "/one_nan.npy";
  QFUSE_ASSERT_OK(base::WriteFileAtomically(
      path, testing::NpyBytes("<f4", false, {8, 4},
                              std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4))));
  data::DataSource source;
  source.path = path;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto data, data::OpenDataset({source}, b.graph(), 8));
  absl::StatusOr<CalibrationRun> run = Calibrate(b.graph(), *data, EightSamplesInBatchesOfFour());
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(),
            "tensor 'input' has NaN or Inf in sample 5 (" + path + " sample 5)");
}

}  // namespace
}  // namespace qfuse::calib
