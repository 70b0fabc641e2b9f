// Calibration tables: TensorRT cache text and JSON written, read back and written again
// byte for byte; graph fingerprints guard against applying a table to another graph.
#include "calib/calibration_table.h"

#include <cmath>
#include <fstream>

#include "base/file_util.h"
#include "calib/graph_fingerprint.h"
#include "gtest/gtest.h"
#include "numerics/threshold_scale.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::calib {
namespace {

CalibrationTable SampleTable() {
  CalibrationTable t;
  t.method = "entropy";
  t.samples = 512;
  t.fingerprint = "0123456789abcdef";
  // Scales with awkward decimal expansions, a tiny one and a large one.
  for (auto [name, threshold, lo, hi] : std::vector<std::tuple<std::string, float, float, float>>{
           {"conv1_out", 3.14159274f, -2.5f, 7.75f}, {"input", 1.0f, 0.0f, 1.0f}, {"logits", 1e-3f, -1e-3f, 2e-3f},
           {"stage2/add", 123456.789f, 0.f, 2e5f}}) {
    TensorRange r;
    r.name = name;
    r.threshold = threshold;
    r.scale = numerics::ScaleOfThreshold(threshold, numerics::kInt8SymmetricMax);
    r.min = lo;
    r.max = hi;
    if (name == "logits") r.bounded_by = "Sigmoid";
    t.tensors.push_back(r);
  }
  return t;
}

TEST(CalibrationTableTest, TensorRtCacheFormat) {
  const std::string text = ToTensorRtCache(SampleTable());
  // Header, then name: hex of the float32 scale bits (1.0/127 = 0x3c010204).
  EXPECT_EQ(text.substr(0, text.find('\n')), "TRT-8601-EntropyCalibration2");
  EXPECT_NE(text.find("\ninput: 3c010204\n"), std::string::npos) << text;
}

TEST(CalibrationTableTest, TensorRtCacheRoundTripIsByteIdentical) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string path = dir + "/calib.cache";
  QFUSE_ASSERT_OK(WriteCalibrationTable(SampleTable(), path));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string first, base::ReadFileToString(path));
  QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationTable read, ReadCalibrationTable(path, "other graph", /*force=*/false));
  ASSERT_EQ(read.tensors.size(), 4u);
  EXPECT_EQ(read.method, "entropy");
  EXPECT_EQ(read.Find("input")->scale, 1.0f / 127.f);  // bit-exact
  EXPECT_TRUE(std::isnan(read.Find("input")->min));   // the cache has no ranges
  QFUSE_ASSERT_OK(WriteCalibrationTable(read, dir + "/calib2.cache"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string second, base::ReadFileToString(dir + "/calib2.cache"));
  EXPECT_EQ(first, second);
}

TEST(CalibrationTableTest, JsonRoundTripIsByteIdenticalAndKeepsEverything) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const CalibrationTable table = SampleTable();
  QFUSE_ASSERT_OK(WriteCalibrationTable(table, dir + "/calib.json"));
  QFUSE_ASSERT_OK_AND_ASSIGN(CalibrationTable read, ReadCalibrationTable(dir + "/calib.json", table.fingerprint, false));
  EXPECT_EQ(read.samples, 512);
  for (const TensorRange& r : table.tensors) {
    const TensorRange* back = read.Find(r.name);
    ASSERT_NE(back, nullptr) << r.name;
    EXPECT_EQ(back->threshold, r.threshold);
    EXPECT_EQ(back->scale, r.scale);
    EXPECT_EQ(back->min, r.min);
    EXPECT_EQ(back->max, r.max);
    EXPECT_EQ(back->bounded_by, r.bounded_by);
  }
  EXPECT_EQ(read.Find("logits")->bounded_by, "Sigmoid");
  EXPECT_EQ(ToJson(read), ToJson(table));
}

TEST(CalibrationTableTest, MismatchedFingerprintIsRefusedUnlessForced) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/other.json";
  QFUSE_ASSERT_OK(WriteCalibrationTable(SampleTable(), path));
  absl::StatusOr<CalibrationTable> refused = ReadCalibrationTable(path, "fedcba9876543210", false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("made for graph 0123456789abcdef"), std::string::npos) << refused.status();
  QFUSE_EXPECT_OK(ReadCalibrationTable(path, "fedcba9876543210", true));
}

TEST(CalibrationTableTest, MalformedInputsAreOneLineErrors) {
  EXPECT_FALSE(ParseTensorRtCache("hello\n", "x.cache").ok());
  absl::StatusOr<CalibrationTable> bad = ParseTensorRtCache("TRT-8601-EntropyCalibration2\nconv: 12zz\n", "x.cache");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.cache line 2"), std::string::npos) << bad.status();
  EXPECT_FALSE(ParseTensorRtCache("TRT-8601-EntropyCalibration2\nconv: 00000000\n", "x.cache").ok());  // scale 0
  EXPECT_FALSE(ParseJson("{not json", "x.json").ok());
  EXPECT_FALSE(ParseJson(R"({"format":"something-else"})", "x.json").ok());
}

// Fields of the wrong type used to throw out of nlohmann's getters and abort the process
// (found by the table fuzzer: "samples" holding an object). Each is now a one-line error.
TEST(CalibrationTableTest, JsonFieldsOfTheWrongTypeAreErrorsNotExceptions) {
  const std::string head = R"({"format":"qfuse-calibration",)";
  const std::string tensor = R"("tensors":{"x":{"threshold":1.5,"scale_bits":"3c4ccccd"}}})";
  QFUSE_ASSERT_OK(ParseJson(head + tensor, "x.json").status());
  EXPECT_EQ(ParseJson(head + R"("samples":{"input":1},)" + tensor, "x.json").status().message(),
            "x.json: 'samples' is not a non-negative integer");
  EXPECT_EQ(ParseJson(R"({"format":7,)" + tensor, "x.json").status().message(), "x.json: 'format' is not a string");
  EXPECT_EQ(ParseJson(head + R"("percentile":"high",)" + tensor, "x.json").status().message(),
            "x.json: 'percentile' is not a finite number");
  EXPECT_EQ(ParseJson(head + R"("tensors":{"x":{"threshold":1e300,"scale_bits":"3c4ccccd"}}})", "x.json")
                .status()
                .message(),
            "x.json: tensor 'x': 'threshold' is not a finite number");
  EXPECT_EQ(ParseJson(head + R"("tensors":{"x":{"threshold":1,"min":[1],"scale_bits":"3c4ccccd"}}})", "x.json")
                .status()
                .message(),
            "x.json: tensor 'x': 'min' is not a finite number");
  EXPECT_EQ(ParseJson(head + R"("tensors":{"x":{"threshold":1,"method":3,"scale_bits":"3c4ccccd"}}})", "x.json")
                .status()
                .message(),
            "x.json: tensor 'x': 'method' is not a string");
}

TEST(GraphFingerprintTest, ChangesWithWeightsAndStructureOnly) {
  auto make = [](float bias, const std::string& act) {
    testing::GraphBuilder b;
    ir::Value* x = b.Input("x", {1, 4});
    ir::Value* y = b.Op("Add", {x, b.Floats("b", {4}, {bias, 0, 0, 0})}, "y", {1, 4});
    b.Output(b.Op(act, {y}, "z", {1, 4}));
    return *GraphFingerprint(b.graph());
  };
  EXPECT_EQ(make(1.f, "Relu"), make(1.f, "Relu"));
  EXPECT_NE(make(1.f, "Relu"), make(1.5f, "Relu"));
  EXPECT_NE(make(1.f, "Relu"), make(1.f, "Sigmoid"));
  EXPECT_EQ(make(1.f, "Relu").size(), 16u);
}

}  // namespace
}  // namespace qfuse::calib
