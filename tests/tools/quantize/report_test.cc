#include "tools/quantize/report.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "base/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"
#include "tests/tools/quantize/report_fixture.h"

namespace qfuse::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::ordered_json;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(SummaryTableTest, HoldsTheNumbersOfEveryRow) {
  const std::string table = SummaryTable(testing::SampleResult(true), testing::SampleConfig());
  for (const char* cell : {"fp32", "full", "none", "91.23", "90.87", "88.02", "98.76", "95.40", "27.41", "19.88",
                           "0.99877", "0.99211", "14", "31", "11", "27", "1.25", "2.75", "3.25"}) {
    EXPECT_THAT(table, HasSubstr(cell));
  }
  EXPECT_THAT(table, HasSubstr("fp32 evaluation: 3.500 s"));
  EXPECT_THAT(table, HasSubstr("full: keep float <script>alert('x')</script>, stage0/conv1 -> output SQNR 31.00 dB "
                               "on the 16 analysis samples (all int8: 25.50 dB), 29.88 dB on the evaluation set (all "
                               "int8: 27.41 dB), top-1 91.04%, agreement 99.12%"));
  EXPECT_THAT(table, Not(HasSubstr("n/a")));
}

// A dense or sequence output has no top-1 agreement (NaN): the suggestion's note gives the SQNRs only.
TEST(SummaryTableTest, SuggestionOfADenseOutputHasNoAgreement) {
  pipeline::QuantizeResult result = testing::SampleResult(false);
  for (pipeline::LevelResult& level : result.levels) level.suggestion_agreement = std::nan("");
  const std::string table = SummaryTable(result, testing::SampleConfig());
  EXPECT_THAT(table, HasSubstr("29.88 dB on the evaluation set (all int8: 27.41 dB)\n"));
  EXPECT_THAT(table, Not(HasSubstr("nan")));
  EXPECT_THAT(table, Not(HasSubstr("does not carry over")));
  // Lower on the evaluation set than all int8: said.
  result.levels[0].suggestion_sqnr_db = 27.0;
  EXPECT_THAT(SummaryTable(result, testing::SampleConfig()),
              HasSubstr("full: the suggestion lowers the evaluation set's SQNR: chosen on 16 analysis samples (int8 "
                        "simulated in float), it does not carry over"));
  // Lower by less than the printed precision: not said.
  result.levels[0].suggestion_sqnr_db = result.levels[0].sqnr_db - 0.001;
  EXPECT_THAT(SummaryTable(result, testing::SampleConfig()), Not(HasSubstr("does not carry over")));
}

// A later level above the first one run on the evaluation set is named, with its file: higher
// output SQNR and, with labels, top-1 not lower; not when the first is the best.
TEST(SummaryTableTest, NamesALevelMoreAccurateThanTheFirst) {
  pipeline::QuantizeResult result = testing::SampleResult(false);
  EXPECT_THAT(SummaryTable(result, testing::SampleConfig()), Not(HasSubstr("more accurate")));
  result.levels[1].sqnr_db = 31.25;
  EXPECT_THAT(SummaryTable(result, testing::SampleConfig()),
              HasSubstr("none is more accurate than full on this evaluation set (SQNR 31.25 against 27.41 dB): "
                        "compare the levels on data like yours before choosing a file "
                        "(/tmp/out/quantize-resnet_small/model_int8_none.onnx)"));
  // Within the printed precision: not said.
  result.levels[1].sqnr_db = result.levels[0].sqnr_db + 0.004;
  EXPECT_THAT(SummaryTable(result, testing::SampleConfig()), Not(HasSubstr("more accurate")));
  // With labels, a higher SQNR with a lower top-1 (88.02% against 90.87%) is not more accurate.
  result = testing::SampleResult(true);
  result.levels[1].sqnr_db = 31.25;
  EXPECT_THAT(SummaryTable(result, testing::SampleConfig()), Not(HasSubstr("more accurate")));
  result.levels[1].top1 = 90.87;
  EXPECT_THAT(SummaryTable(result, testing::SampleConfig()),
              HasSubstr("none is more accurate than full on this evaluation set (SQNR 31.25 against 27.41 dB, "
                        "top-1 90.87% against 90.87%)"));
}

TEST(SummaryTableTest, ColumnsAreAligned) {
  const std::string table = SummaryTable(testing::SampleResult(true), testing::SampleConfig());
  // Lines 2..4 are the header, fp32 and full rows: numbers are right-aligned, so the
  // header and both rows end their "top-1 %" column at the same offset.
  std::vector<std::string> lines;
  for (size_t start = 0, end; (end = table.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(table.substr(start, end - start));
  }
  ASSERT_GE(lines.size(), 4u);
  const size_t header_end = lines[1].find("top-1 %") + 7;
  EXPECT_EQ(lines[2].find("91.23") + 5, header_end);
  EXPECT_EQ(lines[3].find("90.87") + 5, header_end);
}

TEST(SummaryTableTest, WithoutLabelsTop1IsNotApplicable) {
  const std::string table = SummaryTable(testing::SampleResult(false), testing::SampleConfig());
  EXPECT_EQ(Count(table, "n/a"), 3 + 1 + 2);  // fp32, full, none, the note, two suggestion notes
  EXPECT_THAT(table, HasSubstr("accuracy is the top-1 agreement with fp32"));
  EXPECT_THAT(table, HasSubstr("98.76"));
}

void ExpectNoTimingKeys(const Json& j, const std::string& where) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      EXPECT_THAT(key, Not(HasSubstr("second"))) << where;
      EXPECT_THAT(key, Not(HasSubstr("time"))) << where;
      ExpectNoTimingKeys(value, where + "." + key);
    }
  } else if (j.is_array()) {
    for (const Json& item : j) ExpectNoTimingKeys(item, where + "[]");
  }
}

TEST(ReportJsonTest, ParsesBackWithEverythingButTimes) {
  const std::string text = ReportJson(testing::SampleResult(true), testing::SampleConfig());
  const Json j = Json::parse(text);
  ExpectNoTimingKeys(j, "report");
  EXPECT_EQ(j["config"]["model"], "models/resnet_small/model.onnx");
  EXPECT_EQ(j["config"]["method"], "entropy");
  EXPECT_EQ(j["config"]["per_channel"], true);
  EXPECT_EQ(j["config"]["activation_type"], "int8");
  EXPECT_EQ(j["config"]["keep_float"], Json::array({"fc"}));
  EXPECT_EQ(j["config"]["samples"]["calibration"], 512);
  EXPECT_EQ(j["config"]["samples"]["evaluation"], 10000);
  EXPECT_DOUBLE_EQ(j["fp32"]["top1"].get<double>(), 91.23);
  ASSERT_EQ(j["levels"].size(), 2u);
  const Json& full = j["levels"][0];
  EXPECT_EQ(full["level"], "full");
  EXPECT_EQ(full["model_file"], "model_int8_full.onnx");
  EXPECT_EQ(full["table_file"], "calibration_full.json");
  EXPECT_DOUBLE_EQ(full["metrics"]["sqnr_db"].get<double>(), 27.4123);
  EXPECT_EQ(full["conversion"]["quantized_activations"], 11);
  EXPECT_EQ(full["conversion"]["widened_bias_channels"], 2);
  ASSERT_EQ(full["layers"].size(), 9u);
  EXPECT_EQ(full["layers"][0]["node"], "<script>alert('x')</script>");
  EXPECT_DOUBLE_EQ(full["layers"][0]["sqnr_accumulated_db"].get<double>(), 21.5);
  EXPECT_TRUE(full["layers"][8]["sqnr_isolated_db"].is_null());  // +inf
  EXPECT_EQ(full["layers"][1]["fallback_gain_db"].get<double>(), 1.5);
  EXPECT_TRUE(full["layers"][2]["fallback_gain_db"].is_null());  // not measured
  EXPECT_EQ(full["keep_float_suggestion"]["nodes"].size(), 2u);
  EXPECT_DOUBLE_EQ(full["keep_float_suggestion"]["output_sqnr_with_suggestion_db"].get<double>(), 31.0);
  EXPECT_DOUBLE_EQ(full["keep_float_suggestion"]["output_sqnr_with_suggestion_on_eval_db"].get<double>(), 29.875);
  const Json& tensors = full["calibration"]["tensors"];
  ASSERT_EQ(tensors.size(), 13u);
  EXPECT_EQ(tensors[1]["name"], "act_01");
  EXPECT_EQ(tensors[1]["threshold"].get<double>(), 1.5625);  // 2.5 * 0.625
  EXPECT_EQ(tensors[1]["max"].get<double>(), 2.5);
  EXPECT_EQ(tensors[1]["method"], "entropy");
  EXPECT_EQ(tensors[1]["bounded_by"], "Sigmoid");
  EXPECT_FALSE(tensors[0].contains("bounded_by"));
  EXPECT_TRUE(tensors[12]["min"].is_null());  // NaN from a TensorRT cache
  // float32 values are written as their shortest decimal, not as 17-digit doubles.
  EXPECT_THAT(text, HasSubstr("\"scale\": 0.0157480314,"));
}

TEST(ReportJsonTest, WithoutLabelsTop1IsNull) {
  const Json j = Json::parse(ReportJson(testing::SampleResult(false), testing::SampleConfig()));
  EXPECT_TRUE(j["fp32"]["top1"].is_null());
  EXPECT_TRUE(j["levels"][0]["metrics"]["top1"].is_null());
  EXPECT_EQ(j["config"]["labels"], false);
}

TEST(ReportJsonTest, SameBytesAcrossRunsTimingsAndOutputFolders) {
  const pipeline::QuantizeConfig config = testing::SampleConfig();
  pipeline::QuantizeResult result = testing::SampleResult(true);
  const std::string first = ReportJson(result, config);
  EXPECT_EQ(ReportJson(result, config), first);
  result.fp32_seconds = 99;
  result.levels[0].seconds.calibrate = 42;
  result.levels[1].model_file = "/elsewhere/model_int8_none.onnx";
  result.levels[1].table_file = "/elsewhere/calibration_none.json";
  EXPECT_EQ(ReportJson(result, config), first);
}

TEST(ReportHtmlTest, IsSelfContainedAndEscaped) {
  const std::string html = ReportHtml(testing::SampleResult(true), testing::SampleConfig());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("</html>"));
  for (const char* external : {"http://", "https://", "src=", "href=", "url(", "@import", "<script", "<link",
                               "<img", "<iframe"}) {
    EXPECT_THAT(html, Not(HasSubstr(external))) << external;
  }
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
  EXPECT_EQ(Count(html, "<svg"), 2);  // one chart per level
  EXPECT_EQ(Count(html, "</svg>"), 2);
  EXPECT_THAT(html, HasSubstr("<table class=\"summary\" id=\"summary\">"));
  EXPECT_THAT(html, HasSubstr("90.87"));
  EXPECT_THAT(html, HasSubstr("Keeping these nodes in float takes the output SQNR from 25.50 dB to 31.00 dB on the 16 "
                              "analysis samples, from 27.41 dB to 29.88 dB on the evaluation set; top-1 91.04%, "
                              "agreement with fp32 99.12%"));
  EXPECT_THAT(html, HasSubstr("act_cache_only"));
  // act_01: threshold 1.5625 of max|x| 2.5, lowered to a Sigmoid's bound; act_05: clipped by its method.
  EXPECT_THAT(html, HasSubstr("62.5 %, Sigmoid's bound</td><td><span class=\"bar\"><span class=\"bound\" "
                              "style=\"width:62.5%\">"));
  EXPECT_THAT(html, HasSubstr("62.5 %</td><td><span class=\"bar\"><span class=\"clip\" style=\"width:62.5%\">"));
  EXPECT_THAT(html, HasSubstr("model_int8_full.onnx"));
  EXPECT_THAT(html, Not(HasSubstr("/tmp/out")));
  EXPECT_EQ(Count(html, "<section"), 2);
  EXPECT_EQ(ReportHtml(testing::SampleResult(true), testing::SampleConfig()), html);
}

TEST(ReportHtmlTest, LevelWithoutAnalysisHasNoChart) {
  pipeline::QuantizeResult result = testing::SampleResult(false);
  result.levels[1].analysis = {};
  const std::string html = ReportHtml(result, testing::SampleConfig());
  EXPECT_EQ(Count(html, "<svg"), 1);
  EXPECT_THAT(html, HasSubstr("No per-layer analysis"));
  EXPECT_THAT(html, HasSubstr("n/a"));
}

TEST(WriteReportsTest, WritesBothFiles) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const pipeline::QuantizeResult result = testing::SampleResult(true);
  const pipeline::QuantizeConfig config = testing::SampleConfig();
  QFUSE_ASSERT_OK(WriteReports(result, config, dir + "/report.json", dir + "/report.html"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string json, base::ReadFileToString(dir + "/report.json"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string html, base::ReadFileToString(dir + "/report.html"));
  EXPECT_EQ(json, ReportJson(result, config));
  EXPECT_EQ(html, ReportHtml(result, config));
}

TEST(WriteReportsTest, FailsOnAMissingFolder) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/missing/folder";
  EXPECT_FALSE(WriteReports(testing::SampleResult(true), testing::SampleConfig(), dir + "/r.json", dir + "/r.html").ok());
}

}  // namespace
}  // namespace qfuse::tools
