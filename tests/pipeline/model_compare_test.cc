#include "pipeline/model_compare.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/onnx_export.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::pipeline {
namespace {

using ::testing::HasSubstr;

std::string TmpPath(const std::string& name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

// y = x * scale (per class), x: [batch, 3]. The output is named `output`.
std::string SaveScaleModel(const std::string& file, const std::vector<float>& scale,
                           const std::string& output = "y") {
  testing::GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 3});
  b.Output(b.Op("Mul", {x, b.Floats("scale", {3}, scale)}, output, {-1, 3}));
  const std::string path = TmpPath(file);
  EXPECT_TRUE(ir::SaveModel(b.model(), path).ok());
  return path;
}

// Two samples, [1, 2, 3] and [3, 2, 1], as a raw float32 file.
data::DataSource TwoSamples() {
  const std::vector<float> samples = {1, 2, 3, 3, 2, 1};
  const std::string path = TmpPath("samples.f32");
  EXPECT_TRUE(
      base::WriteFileAtomically(path, std::string(reinterpret_cast<const char*>(samples.data()), samples.size() * 4)).ok());
  data::DataSource source;
  source.path = path;
  source.format = data::DataFormat::kRawFloat32;
  source.raw_shape = {3};
  return source;
}

// IDX label file (magic 0x00000801), labels 2 and 0.
std::string Labels() {
  const std::string path = TmpPath("labels-idx1-ubyte");
  EXPECT_TRUE(base::WriteFileAtomically(path, std::string("\x00\x00\x08\x01\x00\x00\x00\x02\x02\x00", 10)).ok());
  return path;
}

CompareOptions Options(const std::string& a, const std::string& b) {
  CompareOptions options;
  options.model_a = a;
  options.model_b = b;
  options.data = {TwoSamples()};
  return options;
}

TEST(CompareModelsTest, ModelAgainstItselfIsIdentical) {
  const std::string a = SaveScaleModel("a.onnx", {1, 1, 1});
  QFUSE_ASSERT_OK_AND_ASSIGN(ComparisonReport report, CompareModels(Options(a, a)));
  EXPECT_EQ(report.samples, 2);
  ASSERT_EQ(report.outputs.size(), 1u);
  const OutputComparison& c = report.outputs[0];
  EXPECT_EQ(c.name_a, "y");
  EXPECT_EQ(c.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.agreement.sqnr_db, std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(c.agreement.cosine, 1);
  EXPECT_EQ(c.agreement.max_abs_diff, 0);
  EXPECT_EQ(c.agreement.top1_agreement, 100);
  EXPECT_EQ(c.top1_a, -1);
  EXPECT_THAT(FormatComparison(report, Options(a, a)), HasSubstr("inf"));
}

// A = [[1,2,3],[3,2,1]], B = A with the last class halved = [[1,2,1.5],[3,2,0.5]].
// signal 28, noise 1.5^2 + 0.5^2 = 2.5: SQNR = 10 log10(11.2) = 10.4922 dB;
// A.B = 23, |B|^2 = 20.5: cosine = 23 / sqrt(28 * 20.5) = 0.960001;
// argmax A = (2, 0), B = (1, 0): agreement 50 %; labels (2, 0): A 100 %, B 50 %.
TEST(CompareModelsTest, PerturbedModelMatchesHandComputedNumbers) {
  const std::string a = SaveScaleModel("a.onnx", {1, 1, 1});
  const std::string b = SaveScaleModel("b.onnx", {1, 1, 0.5f});
  CompareOptions options = Options(a, b);
  options.labels_path = Labels();
  QFUSE_ASSERT_OK_AND_ASSIGN(ComparisonReport report, CompareModels(options));
  ASSERT_EQ(report.outputs.size(), 1u);
  const OutputComparison& c = report.outputs[0];
  EXPECT_NEAR(c.agreement.sqnr_db, 10 * std::log10(28 / 2.5), 1e-9);
  EXPECT_NEAR(c.agreement.sqnr_db, 10.4922, 1e-4);
  EXPECT_NEAR(c.agreement.cosine, 23 / std::sqrt(28 * 20.5), 1e-12);
  EXPECT_DOUBLE_EQ(c.agreement.max_abs_diff, 1.5);
  EXPECT_DOUBLE_EQ(c.agreement.top1_agreement, 50);
  EXPECT_DOUBLE_EQ(c.top1_a, 100);
  EXPECT_DOUBLE_EQ(c.top1_b, 50);
  const std::string text = FormatComparison(report, options);
  for (const char* cell : {"[2,3]", "50.00", "10.49", "0.960001", "1.5", "100.00"}) {
    EXPECT_THAT(text, HasSubstr(cell)) << text;
  }
}

TEST(CompareModelsTest, SampleLimitAndPositionalMatch) {
  const std::string a = SaveScaleModel("a.onnx", {1, 1, 1});
  const std::string b = SaveScaleModel("b_renamed.onnx", {2, 2, 2}, "logits");
  CompareOptions options = Options(a, b);
  options.max_samples = 1;
  QFUSE_ASSERT_OK_AND_ASSIGN(ComparisonReport report, CompareModels(options));
  EXPECT_EQ(report.samples, 1);
  const OutputComparison& c = report.outputs[0];
  EXPECT_EQ(c.name_b, "logits");
  // B = 2A: noise equals signal, 0 dB; same direction, cosine 1; max |A - B| = max A = 3.
  EXPECT_NEAR(c.agreement.sqnr_db, 0, 1e-12);
  EXPECT_NEAR(c.agreement.cosine, 1, 1e-12);
  EXPECT_DOUBLE_EQ(c.agreement.max_abs_diff, 3);
  EXPECT_THAT(FormatComparison(report, options), HasSubstr("y / logits"));
}

TEST(CompareModelsTest, ErrorsNameTheProblem) {
  const std::string a = SaveScaleModel("a.onnx", {1, 1, 1});
  absl::Status missing = CompareModels(Options(a, TmpPath("missing.onnx"))).status();
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.message()), HasSubstr("missing.onnx"));

  CompareOptions options = Options(a, a);
  options.labels_path = TmpPath("one-label-idx1-ubyte");
  QFUSE_ASSERT_OK(base::WriteFileAtomically(options.labels_path, std::string("\x00\x00\x08\x01\x00\x00\x00\x01\x02", 9)));
  absl::Status few = CompareModels(options).status();
  EXPECT_THAT(std::string(few.message()), HasSubstr("1 labels for 2 samples"));

  testing::GraphBuilder wide;
  ir::Value* x = wide.Input("x", {-1, 3});
  ir::Value* y = wide.Op("Mul", {x, wide.Floats("s", {3}, {1, 1, 1})}, "y", {-1, 3});
  wide.Output(wide.Op("Concat", {y, y}, "y2", {-1, 6}, testing::GraphBuilder::Attrs({{"axis", int64_t{1}}})));
  QFUSE_ASSERT_OK(ir::SaveModel(wide.model(), TmpPath("wide.onnx")));
  absl::Status shape = CompareModels(Options(a, TmpPath("wide.onnx"))).status();
  EXPECT_THAT(std::string(shape.message()), HasSubstr("differ in type or shape"));
}

}  // namespace
}  // namespace qfuse::pipeline
