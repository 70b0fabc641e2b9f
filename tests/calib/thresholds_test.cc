// calib/thresholds: the numpy reference's fixtures, hand-computed tiny histograms, edge cases
// and errors. The searches against their definitions on random histograms are in
// thresholds_search_test.cc.
#include "calib/thresholds.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "calib/histogram.h"
#include "gtest/gtest.h"
#include "tests/calib/thresholds_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::calib {
namespace {

using thresholds_test::kAllMethods;
using thresholds_test::Options;

// Written by calib/reference/thresholds_reference.py; relative to the workspace root, which is
// the working directory under `bazel test`.
constexpr char kCasesPath[] = "tests/testdata/calib/threshold_cases.json";

// ---------------------------------------------------------------------------------------------
// Fixtures from the numpy reference: every case, every method, to the bin.

TEST(ThresholdsReferenceTest, AgreesWithNumpyReferenceToTheBin) {
  std::ifstream in(kCasesPath);
  ASSERT_TRUE(in.good()) << kCasesPath << " missing (regenerate with calib/reference/thresholds_reference.py)";
  const nlohmann::json root = nlohmann::json::parse(in);
  ASSERT_EQ(root.at("cases").size(), 5u);
  int checked = 0;
  for (const nlohmann::json& c : root.at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    QFUSE_ASSERT_OK_AND_ASSIGN(
        const AbsHistogram h,
        AbsHistogram::FromBins(c.at("bins").get<std::vector<int64_t>>(), c.at("bin_width").get<float>(),
                               c.at("min").get<float>(), c.at("max").get<float>()));
    ASSERT_EQ(h.num_bins(), 2048);
    ASSERT_EQ(h.count(), c.at("count").get<int64_t>());
    for (const auto& [key, expected] : c.at("expected").items()) {
      SCOPED_TRACE(key);
      ThresholdOptions o;
      o.num_quantized_bins = c.at("num_quantized_bins");
      o.percentile = c.at("percentile");
      o.entropy_skip_zero_spike = false;  // "entropy" in the fixtures is TensorRT's published algorithm
      if (key == "entropy_skip_zero_spike") {
        o.method = CalibrationMethod::kEntropy;
        o.entropy_skip_zero_spike = true;
      } else {
        QFUSE_ASSERT_OK_AND_ASSIGN(o.method, ParseCalibrationMethod(key));
      }
      QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice, ChooseThreshold(h, o));
      EXPECT_EQ(choice.edge, expected.at("edge").get<int>());
      EXPECT_FLOAT_EQ(choice.threshold, expected.at("threshold").get<float>());
      QFUSE_ASSERT_OK_AND_ASSIGN(const float t, ComputeThreshold(h, o));
      EXPECT_EQ(t, choice.threshold);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 25);
}

// The fixtures' numbers, pinned here too so a regenerated JSON cannot drift unnoticed.
TEST(ThresholdsReferenceTest, FixtureThresholdsAreTheExpectedShape) {
  std::ifstream in(kCasesPath);
  ASSERT_TRUE(in.good()) << kCasesPath;
  const nlohmann::json root = nlohmann::json::parse(in);
  std::map<std::string, std::map<std::string, int>> edges;
  for (const nlohmann::json& c : root.at("cases")) {
    for (const auto& [key, expected] : c.at("expected").items()) edges[c.at("name")][key] = expected.at("edge");
  }
  // Gaussian + outliers at 20-30 (width 2^-6): entropy clips at 4.5, far below max 29.68.
  EXPECT_EQ(edges["gaussian_outliers"]["entropy"], 288);
  EXPECT_EQ(edges["gaussian_outliers"]["percentile"], 250);
  EXPECT_EQ(edges["gaussian_outliers"]["mse"], 1016);
  EXPECT_EQ(edges["gaussian_outliers"]["max"], 1900);
  // Uniform: entropy keeps the whole range.
  EXPECT_EQ(edges["uniform"]["entropy"], 2048);
  EXPECT_EQ(edges["uniform"]["mse"], 2042);
  EXPECT_EQ(edges["all_zeros"]["entropy"], 0);
  // One occupied bin (3.5 at width 2^-9: bin 1792): the searches end at its top.
  EXPECT_EQ(edges["single_spike"]["entropy"], 1793);
  EXPECT_EQ(edges["single_spike"]["mse"], 1793);
  // Post-ReLU, 256 levels (width 2^-8): the zero spike pulls entropy down to 2.0 unless skipped (4.31).
  EXPECT_EQ(edges["relu_half_normal"]["entropy"], 512);
  EXPECT_EQ(edges["relu_half_normal"]["entropy_skip_zero_spike"], 1103);
  EXPECT_EQ(edges["relu_half_normal"]["percentile"], 964);
  EXPECT_EQ(edges["relu_half_normal"]["mse"], 1084);
}

// ---------------------------------------------------------------------------------------------
// Hand-computed tiny histograms.

TEST(ThresholdsTest, MaxAndPercentileOnTinyHistogram) {
  // Bins of width 1: c = [5, 3, 1, 0, 0, 0, 0, 1], N = 10, max |x| = 7.5.
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h, AbsHistogram::FromBins({5, 3, 1, 0, 0, 0, 0, 1}, 1.0f, 0.0f, 7.5f));
  ThresholdOptions o = Options(CalibrationMethod::kMax, 2);
  QFUSE_ASSERT_OK_AND_ASSIGN(ThresholdChoice choice, ChooseThreshold(h, o));
  EXPECT_EQ(choice.edge, 8);
  EXPECT_EQ(choice.threshold, 7.5f);

  o.method = CalibrationMethod::kPercentile;
  o.percentile = 90;  // target 9: cumulative 5, 8, 9 -> edge 3
  QFUSE_ASSERT_OK_AND_ASSIGN(choice, ChooseThreshold(h, o));
  EXPECT_EQ(choice.edge, 3);
  EXPECT_EQ(choice.threshold, 3.0f);
  o.percentile = 80;  // target 8 reached exactly at edge 2
  QFUSE_ASSERT_OK_AND_ASSIGN(choice, ChooseThreshold(h, o));
  EXPECT_EQ(choice.edge, 2);
  EXPECT_EQ(choice.threshold, 2.0f);
  o.percentile = 95;  // target 9.5: only the last bin reaches it; edge 8 = 8.0 clamped to max 7.5
  QFUSE_ASSERT_OK_AND_ASSIGN(choice, ChooseThreshold(h, o));
  EXPECT_EQ(choice.edge, 8);
  EXPECT_EQ(choice.threshold, 7.5f);
  o.percentile = 100;
  QFUSE_ASSERT_OK_AND_ASSIGN(choice, ChooseThreshold(h, o));
  EXPECT_EQ(choice.threshold, 7.5f);
}

TEST(ThresholdsTest, EntropyOnTinyHistogram) {
  // c = [4, 2, 0, 1], width 1, M = 2 levels. Candidates:
  //   i = 2: P = [4, 2 + 1], Q = [4, 2]                 KL = 4/7 ln(6/7) + 3/7 ln(9/7) = 0.019620
  //   i = 3: P = [4, 2, 0 + 1] but c[2] = 0 -> Q[2] = 0  KL = +inf (rejected)
  //   i = 4: P = [4, 2, 0, 1], Q = [3, 3, 0, 1]          KL = 4/7 ln(4/3) + 2/7 ln(2/3) = 0.048543
  // (c[0] kept, as in TensorRT's published algorithm.)
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h, AbsHistogram::FromBins({4, 2, 0, 1}, 1.0f, -3.5f, 1.0f));
  ThresholdOptions options = Options(CalibrationMethod::kEntropy, 2);
  options.entropy_skip_zero_spike = false;
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice, ChooseThreshold(h, options));
  EXPECT_EQ(choice.edge, 2);
  EXPECT_EQ(choice.threshold, 2.0f);
}

TEST(ThresholdsTest, EntropyRejectsEmptyLastBinAndFallsBackToNoClipping) {
  // c = [0, 0, 0, 5] (bins 0..2 empty): every i < 4 has an empty last kept bin -> +inf.
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h, AbsHistogram::FromBins({0, 0, 0, 5}, 0.25f, 0.9f, 0.95f));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice, ChooseThreshold(h, Options(CalibrationMethod::kEntropy, 2)));
  EXPECT_EQ(choice.edge, 4);
  EXPECT_EQ(choice.threshold, 0.95f);
}

TEST(ThresholdsTest, MseOnTinyHistogramBreaksTiesTowardsLessClipping) {
  // c = [3, 0, 0, 1], width 1, M = 2 (L = 1: levels 0 and T). Centres 0.5 (x3) and 3.5 (x1).
  //   T = 2: 0.5 -> 0 (err 0.25 x3), 3.5 -> 2 (clipped, err 2.25)    total 3.0
  //   T = 3: 0.5 -> 0 (0.75),        3.5 -> 3 (0.25)                 total 1.0
  //   T = 4: 0.5 -> 0 (0.75),        3.5 -> round(0.875) = 1 -> 4    total 1.0  (tie: larger)
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h, AbsHistogram::FromBins({3, 0, 0, 1}, 1.0f, 0.0f, 3.9f));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice, ChooseThreshold(h, Options(CalibrationMethod::kMse, 2)));
  EXPECT_EQ(choice.edge, 4);
  EXPECT_EQ(choice.threshold, 3.9f);  // 4 clamped to max |x|
}

TEST(ThresholdsTest, MseTradesClippingAgainstRoundingOnTinyHistogram) {
  // c = [10, 10, 0, 0, 0, 0, 0, 1], width 1, M = 2 (levels 0 and T). Centres 0.5, 1.5 (x10 each)
  // and 7.5 (x1). Errors 0.5 -> 0: 2.5 for every T >= 2.
  //   T = 2: 1.5 -> 2 (2.5), 7.5 clipped to 2 (30.25)                         35.25
  //   T = 3: 1.5 -> round_half_even(0.5) = 0 (22.5; 3 would err the same), 7.5 -> 3 (20.25)  45.25
  //   T = 4, 5, 6: 1.5 -> 0 (22.5), 7.5 -> T: 12.25, 6.25, 2.25               37.25, 31.25, 27.25
  //   T = 7: 7.5 -> 7 (0.25); T = 8: 7.5 -> round(0.9375) = 1 -> 8 (0.25)     25.25 both: larger
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h,
                             AbsHistogram::FromBins({10, 10, 0, 0, 0, 0, 0, 1}, 1.0f, 0.0f, 7.6f));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice, ChooseThreshold(h, Options(CalibrationMethod::kMse, 2)));
  EXPECT_EQ(choice.edge, 8);
  EXPECT_EQ(choice.threshold, 7.6f);  // 8 clamped to max |x|
}

// A normalised image input: half of the values are the background -0.81 (|x| spike at bin
// 810 of width 0.001), the rest spread up to 2.02. Entropy keeps the spike's bin and clips the
// spread; auto takes the least expected error of the four and does not clip it.
TEST(ThresholdsTest, AutoPicksTheLeastErrorAndDoesNotClipBehindASpike) {
  std::vector<int64_t> bins(2048, 0);
  bins[810] = 50000;
  for (int b = 0; b < 2020; b += 3) bins[b] += 60;
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h, AbsHistogram::FromBins(bins, 0.001f, 0.0f, 2.02f));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice entropy, ChooseThreshold(h, Options(CalibrationMethod::kEntropy)));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice chosen, ChooseThreshold(h, Options(CalibrationMethod::kAuto)));
  EXPECT_LT(entropy.threshold, 0.9f);  // TensorRT's KL clips at the spike
  EXPECT_GT(chosen.threshold, 1.9f);
  EXPECT_NE(chosen.method, CalibrationMethod::kEntropy);
  const double auto_error = QuantizationError(h, chosen.threshold, 128);
  for (const CalibrationMethod method : kAllMethods) {
    SCOPED_TRACE(CalibrationMethodName(method));
    QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice c, ChooseThreshold(h, Options(method)));
    EXPECT_LE(auto_error, QuantizationError(h, c.threshold, 128));
  }
  // On a smooth post-ReLU-like histogram, auto's error is no worse than entropy's either.
  std::vector<int64_t> smooth(2048, 0);
  for (int b = 0; b < 2048; ++b) smooth[b] = static_cast<int64_t>(1e6 * std::exp(-b / 150.0));
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram s, AbsHistogram::FromBins(smooth, 0.001f, 0.0f, 2.047f));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice s_auto, ChooseThreshold(s, Options(CalibrationMethod::kAuto)));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice s_entropy, ChooseThreshold(s, Options(CalibrationMethod::kEntropy)));
  EXPECT_LE(QuantizationError(s, s_auto.threshold, 128), QuantizationError(s, s_entropy.threshold, 128));
}

// ---------------------------------------------------------------------------------------------
// Edge cases.

TEST(ThresholdsTest, SingleSpikeGivesItsValueForEveryMethod) {
  AbsHistogram spike;  // 4096 bins of width 2^-10 (range 4): every value in bin 3.5 * 1024 = 3584
  spike.Add(std::vector<float>(1000, -3.5f));
  // A spike in the middle of the range (bin 500 of width 0.01).
  std::vector<int64_t> bins(2048, 0);
  bins[500] = 1000;
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram middle, AbsHistogram::FromBins(bins, 0.01f, 5.005f, 5.005f));
  for (const CalibrationMethod method : kAllMethods) {
    SCOPED_TRACE(CalibrationMethodName(method));
    QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice a, ChooseThreshold(spike, Options(method)));
    EXPECT_EQ(a.threshold, 3.5f);
    EXPECT_EQ(a.edge, 3585);  // the searches end at the last occupied bin's top
    QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice b, ChooseThreshold(middle, Options(method)));
    EXPECT_EQ(b.threshold, 5.005f);
  }
}

// The power-of-two grid leaves up to half of the bins above max|x|. A search over those empty
// edges found one where the rounding grid lines up and AtEdge clamped it to max|x|: mse gave
// T = 1.0 here with 27x the squared error of its pick on the data's own edges (a read-only
// review's reproducer). The searches now end at the last occupied bin.
TEST(ThresholdsTest, SearchesDoNotPickEdgesAboveTheData) {
  AbsHistogram h;  // width 2^-11: 1.0 in bin 2048 of 4096
  std::vector<float> values(100, 0.5f);
  values.push_back(1.0f);
  h.Add(values);
  for (const CalibrationMethod method : {CalibrationMethod::kMse, CalibrationMethod::kEntropy}) {
    SCOPED_TRACE(CalibrationMethodName(method));
    QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice c, ChooseThreshold(h, Options(method)));
    EXPECT_LE(c.edge, 2049);
    if (method == CalibrationMethod::kMse) {
      EXPECT_LT(c.threshold, 1.0f);
      EXPECT_LT(QuantizationError(h, c.threshold, 128), QuantizationError(h, 1.0, 128));
    }
  }
}

TEST(ThresholdsTest, AllZerosGiveTheSafeUnitThreshold) {
  AbsHistogram h;
  h.Add(std::vector<float>(100, 0.0f));
  for (const CalibrationMethod method : kAllMethods) {
    SCOPED_TRACE(CalibrationMethodName(method));
    QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice, ChooseThreshold(h, Options(method)));
    EXPECT_EQ(choice.threshold, kZeroRangeThreshold);
    EXPECT_EQ(choice.edge, 0);
    const float scale = choice.threshold / 127;
    EXPECT_TRUE(std::isnormal(scale));
  }
}

TEST(ThresholdsTest, TinyRangeIsFlooredSoTheScaleStaysNormal) {
  AbsHistogram h;
  h.Add(std::vector<float>{1e-40f, -2e-40f});
  for (const CalibrationMethod method : kAllMethods) {
    SCOPED_TRACE(CalibrationMethodName(method));
    QFUSE_ASSERT_OK_AND_ASSIGN(const float t, ComputeThreshold(h, Options(method)));
    EXPECT_EQ(t, kMinThreshold);
    EXPECT_TRUE(std::isnormal(t / 255));
  }
}

TEST(ThresholdsTest, ErrorStatuses) {
  const AbsHistogram empty;
  EXPECT_EQ(ComputeThreshold(empty, Options(CalibrationMethod::kMax)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  AbsHistogram only_nan;
  only_nan.Add(std::vector<float>{std::numeric_limits<float>::quiet_NaN()});
  EXPECT_EQ(ComputeThreshold(only_nan, Options(CalibrationMethod::kEntropy)).status().code(),
            absl::StatusCode::kFailedPrecondition);

  AbsHistogram h;
  h.Add(std::vector<float>{1.0f, 2.0f});
  EXPECT_EQ(ComputeThreshold(h, Options(CalibrationMethod::kEntropy, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ComputeThreshold(h, Options(CalibrationMethod::kEntropy, AbsHistogram::kDefaultNumBins + 1)).status().code(),
      absl::StatusCode::kInvalidArgument);
  for (const double bad : {0.0, -1.0, 100.5, std::numeric_limits<double>::quiet_NaN()}) {
    ThresholdOptions o = Options(CalibrationMethod::kPercentile);
    o.percentile = bad;
    EXPECT_EQ(ComputeThreshold(h, o).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ThresholdsTest, MethodNamesRoundTrip) {
  for (const CalibrationMethod method : kAllMethods) {
    QFUSE_ASSERT_OK_AND_ASSIGN(const CalibrationMethod parsed, ParseCalibrationMethod(CalibrationMethodName(method)));
    EXPECT_EQ(parsed, method);
  }
  EXPECT_EQ(CalibrationMethodName(CalibrationMethod::kMse), "mse");
  EXPECT_EQ(ParseCalibrationMethod("Entropy").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCalibrationMethod("kl").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace qfuse::calib
