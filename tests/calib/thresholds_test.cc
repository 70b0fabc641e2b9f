#include "calib/thresholds.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "calib/histogram.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::calib {
namespace {

// Written by calib/reference/thresholds_reference.py; relative to the workspace root, which is
// the working directory under `bazel test`.
constexpr char kCasesPath[] = "tests/testdata/calib/threshold_cases.json";
// The largest float below 1: max |x| of fixtures on [0, 1), which a histogram range must exceed.
constexpr float kBelowOne = 0.99999994f;

constexpr CalibrationMethod kAllMethods[] = {CalibrationMethod::kEntropy, CalibrationMethod::kPercentile,
                                             CalibrationMethod::kMse,     CalibrationMethod::kMax,
                                             CalibrationMethod::kAuto,    CalibrationMethod::kBalancedMse};

ThresholdOptions Options(CalibrationMethod method, int num_quantized_bins = 128) {
  ThresholdOptions o;
  o.method = method;
  o.num_quantized_bins = num_quantized_bins;
  return o;
}

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

// The header's KL, term by term: sum over P[j] > 0 of p_j * ln(p_j / q_j), +inf where Q is 0
// under P > 0 (written from the definition, one logarithm per bin).
double DefinitionKl(const std::vector<int64_t>& c, int i, int levels) {
  int64_t total = 0, kept = 0;
  for (size_t j = 0; j < c.size(); ++j) total += c[j];
  for (int j = 0; j < i; ++j) kept += c[j];
  if (kept == 0) return std::numeric_limits<double>::infinity();
  std::vector<int64_t> group_count(levels, 0), group_nonempty(levels, 0);  // group g(j) = floor(j * M / i)
  for (int j = 0; j < i; ++j) {
    group_count[static_cast<int64_t>(j) * levels / i] += c[j];
    group_nonempty[static_cast<int64_t>(j) * levels / i] += c[j] > 0 ? 1 : 0;
  }
  double kl = 0;
  for (int j = 0; j < i; ++j) {
    const int64_t p_count = c[j] + (j == i - 1 ? total - kept : 0);
    if (p_count == 0) continue;
    if (c[j] == 0) return std::numeric_limits<double>::infinity();
    const int64_t g = static_cast<int64_t>(j) * levels / i;
    const double p = static_cast<double>(p_count) / static_cast<double>(total);
    const double q =
        static_cast<double>(group_count[g]) / static_cast<double>(group_nonempty[g]) / static_cast<double>(kept);
    kl += p * std::log(p / q);
  }
  return kl;
}

// The definition's least KL, ties to the larger edge.
int DefinitionEntropyEdge(const std::vector<int64_t>& c, int levels) {
  double best = std::numeric_limits<double>::infinity();
  int edge = static_cast<int>(c.size());
  for (int i = levels; i <= static_cast<int>(c.size()); ++i) {
    const double kl = DefinitionKl(c, i, levels);
    if (kl <= best && kl < std::numeric_limits<double>::infinity()) {
      best = kl;
      edge = i;
    }
  }
  return edge;
}

// A random activation-like histogram of 2048 bins over [0, 1) (iteration picks the shape and
// 2^8-2^20 values: half-normal, exponential, a ReLU's zeros, a non-zero spike, mass near 0, far
// outliers), its largest value in the last bin as a histogram of max|x| has.
std::vector<int64_t> RandomHistogram(int iteration, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0, 1);
  std::exponential_distribution<double> exponential(1);
  std::uniform_real_distribution<double> u(0, 1);
  const int n = 2048;
  std::vector<int64_t> c(n, 0);
  const int64_t values = int64_t{1} << (8 + iteration % 13);
  const double scale = 0.05 + 0.5 * u(rng);
  for (int64_t v = 0; v < values; ++v) {
    double x = 0;
    switch (iteration % 6) {
      case 0: x = std::fabs(normal(rng)) * scale; break;
      case 1: x = exponential(rng) * scale; break;
      case 2: x = u(rng) < 0.5 ? 0 : std::fabs(normal(rng)) * scale; break;          // a ReLU's zeros
      case 3: x = u(rng) < 0.3 ? 0.4 : std::fabs(normal(rng)) * scale * 0.5; break;  // a non-zero spike
      case 4: x = std::pow(u(rng), 4.0); break;
      default: x = u(rng) < 0.999 ? std::fabs(normal(rng)) * scale * 0.2 : u(rng); break;  // far outliers
    }
    ++c[std::min(n - 1, static_cast<int>(x * n))];
  }
  int top = n - 1;
  while (top > 0 && c[top] == 0) --top;
  std::swap(c[top], c[n - 1]);
  return c;
}

// 24 such histograms (bins over [0, 1)), drawn from `seed`.
struct RandomCase {
  std::vector<int64_t> bins;
  AbsHistogram histogram;
};
std::vector<RandomCase> RandomCases(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<RandomCase> cases;
  for (int iteration = 0; iteration < 24; ++iteration) {
    std::vector<int64_t> c = RandomHistogram(iteration, rng);
    absl::StatusOr<AbsHistogram> h = AbsHistogram::FromBins(c, 1.0f / c.size(), 0.0f, kBelowOne);
    EXPECT_TRUE(h.ok()) << h.status();
    if (h.ok()) cases.push_back({std::move(c), *std::move(h)});
  }
  return cases;
}

// The search evaluates KL by groups (one logarithm per group); on random activation-like
// histograms, both level counts, with and without the zero-spike rule, it picks the edge whose
// KL by the definition is the least (ties to the larger edge): the same edge as a per-bin search.
TEST(ThresholdsTest, EntropyPicksTheLeastKlByTheDefinition) {
  int iteration = 0;
  for (const auto& [c, h] : RandomCases(7)) {
    ++iteration;
    for (const int levels : {128, 256}) {
      for (const bool skip : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "histogram " << iteration << " levels " << levels << " skip " << skip);
        std::vector<int64_t> p = c;
        if (skip) p[0] = p[1];
        const int want = DefinitionEntropyEdge(p, levels);
        ThresholdOptions o = Options(CalibrationMethod::kEntropy, levels);
        o.entropy_skip_zero_spike = skip;
        QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice, ChooseThreshold(h, o));
        EXPECT_EQ(choice.edge, want);
      }
    }
  }
}

// Sparse histograms (nothing below bin M - 1) where several candidates score exactly 0, e.g.
// c[200] = 1, c[1000] = 2: keeping bins [0, 201) folds all mass into bin 200 and keeping all
// 1001 up to the data's top puts each value in its own group, both KL 0; the tie goes to the
// larger edge (no clipping). A grouped KL with a rounding residue of 1e-16 picked 201, 936 and 131 here.
TEST(ThresholdsTest, EntropySparseTiesGoToTheLargerEdge) {
  const std::vector<std::vector<std::pair<int, int64_t>>> cases = {
      {{200, 1}, {1000, 2}}, {{935, 10}, {1780, 6}, {1816, 8}}, {{130, 1}, {131, 1}, {1500, 1}}};
  for (const auto& spikes : cases) {
    std::vector<int64_t> c(2048, 0);
    for (const auto& [bin, count] : spikes) c[bin] = count;
    SCOPED_TRACE(::testing::Message() << "first spike at " << spikes[0].first);
    QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h, AbsHistogram::FromBins(c, 1.0f / 2048, 0.0f, kBelowOne));
    ThresholdOptions o = Options(CalibrationMethod::kEntropy, 128);
    o.entropy_skip_zero_spike = false;
    QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice, ChooseThreshold(h, o));
    // The search ends at the last occupied bin's top (edges above it would clamp to max|x|).
    const int top = spikes.back().first + 1;
    EXPECT_EQ(choice.edge, DefinitionEntropyEdge(std::vector<int64_t>(c.begin(), c.begin() + top), 128));
    if (spikes[0].first == 200) EXPECT_EQ(choice.edge, 1001);
  }
}

// The kMse score by the header's definition, bin by bin in one sum, on counts or (for
// kBalancedMse) balanced counts.
template <typename Count>
double DefinitionMse(absl::Span<const Count> c, int t, int levels) {
  const double l = levels - 1;
  double error = 0;
  for (size_t b = 0; b < c.size(); ++b) {
    if (c[b] == 0) continue;
    const double x = b + 0.5;
    const double k = std::min(std::nearbyint(x * l / t), l);
    const double d = x - k * t / l;
    error += static_cast<double>(c[b]) * (d * d);
  }
  return error;
}

// The edge j = levels .. c.size() of the least DefinitionMse (ties to the larger edge), and
// that score.
template <typename Count>
std::pair<int, double> LeastDefinitionMse(absl::Span<const Count> c, int levels) {
  double best = std::numeric_limits<double>::infinity();
  int edge = static_cast<int>(c.size());
  for (int j = levels; j <= static_cast<int>(c.size()); ++j) {
    const double error = DefinitionMse(c, j, levels);
    if (error <= best) {
      best = error;
      edge = j;
    }
  }
  return {edge, best};
}

// The kMse search adds its terms in four interleaved sums (SSE4.1 or AVX2 registers); on the
// same random histograms it picks the edge of the least score summed bin by bin (ties to the
// larger edge), and QuantizationError agrees with that score to 1e-12 of it.
TEST(ThresholdsTest, MsePicksTheLeastScoreByTheDefinition) {
  int iteration = 0;
  for (const auto& [c, h] : RandomCases(8)) {
    ++iteration;
    const int n = static_cast<int>(c.size());
    for (const int levels : {128, 256}) {
      SCOPED_TRACE(::testing::Message() << "histogram " << iteration << " levels " << levels);
      const auto [want, best] = LeastDefinitionMse<int64_t>(c, levels);
      QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice,
                                 ChooseThreshold(h, Options(CalibrationMethod::kMse, levels)));
      EXPECT_EQ(choice.edge, want);
      const double t = static_cast<double>(want) / n;
      EXPECT_NEAR(QuantizationError(h, t, levels), best, 1e-12 * best);
    }
  }
}

// The kMse search stops early where an edge's clipping error alone exceeds the least score
// (thresholds.cc); one or two heavy bins (10^3 to 10^14) with light bins below put many edges'
// scores just above that bound. Against every edge up to the last occupied bin's top scored by
// QuantizationError (the search's own sums), ties to the larger edge.
TEST(ThresholdsTest, MseSearchStopsOnlyWhereNoEdgeBelowCanWin) {
  std::mt19937_64 rng(31);
  const auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
  int cases = 0;
  for (int iteration = 0; iteration < 400; ++iteration) {
    std::vector<int64_t> c(2048, 0);
    const int heavy_bin = uniform(100, 2047);
    const int64_t heavy = static_cast<int64_t>(std::pow(10.0, uniform(3, 14)));
    c[heavy_bin] = heavy;
    if (uniform(0, 1) == 1) c[heavy_bin - uniform(1, 3)] = heavy / uniform(2, 9);
    for (int k = uniform(0, 50); k > 0; --k) c[uniform(0, heavy_bin - 1)] += uniform(1, 10);
    const float width = 1.0f / 2048;
    QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h,
                               AbsHistogram::FromBins(c, width, 0.0f, (heavy_bin + 0.5f) * width));
    for (const int levels : {3, 128, 129, 256}) {
      SCOPED_TRACE(::testing::Message() << "histogram " << iteration << " levels " << levels);
      const int top = std::max(heavy_bin + 1, levels);
      int want = 0;
      double best = std::numeric_limits<double>::infinity();
      for (int j = levels; j <= top; ++j) {
        const double error = QuantizationError(h, j * static_cast<double>(width), levels);
        if (error <= best) {
          best = error;
          want = j;
        }
      }
      QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice,
                                 ChooseThreshold(h, Options(CalibrationMethod::kMse, levels)));
      EXPECT_EQ(choice.edge, want);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 1600);
}

// Sample-balanced histograms (AddSamples): batches of 16 samples of 256 |N(0, 1)| values, with
// `outliers` of the 48 samples (the first of their batch) 100 times larger.
AbsHistogram WithOutlierSamples(uint64_t seed, int outliers) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  AbsHistogram h;
  const AbsHistogram::PartRunner inline_run = [](int parts, const std::function<void(int)>& fn) {
    for (int k = 0; k < parts; ++k) fn(k);
  };
  for (int batch = 0; batch < 3; ++batch) {
    std::vector<float> values(16 * 256);
    for (float& x : values) x = std::fabs(normal(rng));
    if (batch < outliers) {
      for (int i = 0; i < 256; ++i) values[i] *= 100.0f;
    }
    h.AddSamples(values, 16, 16 * batch, 1, inline_run);
  }
  h.FinishSamples();
  return h;
}

TEST(ThresholdsTest, BalancedMsePicksTheLeastBalancedScoreByTheDefinition) {
  for (const int outliers : {0, 1, 2}) {
    const AbsHistogram h = WithOutlierSamples(20 + outliers, outliers);
    ASSERT_EQ(h.balanced_bins().size(), h.bins().size());
    for (const int levels : {128, 256}) {
      SCOPED_TRACE(::testing::Message() << outliers << " outlier batches, levels " << levels);
      const auto [want, best] = LeastDefinitionMse(h.balanced_bins(), levels);
      QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice choice,
                                 ChooseThreshold(h, Options(CalibrationMethod::kBalancedMse, levels)));
      EXPECT_EQ(choice.edge, want);
      EXPECT_NEAR(BalancedQuantizationError(h, want * static_cast<double>(h.bin_width()), levels), best, 1e-12 * best);
    }
  }
}

// A few samples 100x the others: the pooled squared error (kMse) stretches the threshold to
// them (T near max |x|, about 300); auto, scoring on the balanced counts, settles far below
// (47: each sample weighs the same relative to its size, so the two large ones still count),
// and its balanced score is the least of every method's.
TEST(ThresholdsTest, AutoIsNotStretchedByOutlierSamples) {
  const AbsHistogram h = WithOutlierSamples(5, 2);
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice pooled, ChooseThreshold(h, Options(CalibrationMethod::kMse)));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice chosen, ChooseThreshold(h, Options(CalibrationMethod::kAuto)));
  std::printf("max %.1f, mse %.2f, auto %.2f (%s)\n", h.max_abs(), pooled.threshold, chosen.threshold,
              std::string(CalibrationMethodName(chosen.method)).c_str());
  EXPECT_GT(pooled.threshold, 0.8f * h.max_abs());
  EXPECT_LT(chosen.threshold, 0.2f * h.max_abs());
  const double auto_error = BalancedQuantizationError(h, chosen.threshold, 128);
  for (const CalibrationMethod method : kAllMethods) {
    SCOPED_TRACE(CalibrationMethodName(method));
    QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice c, ChooseThreshold(h, Options(method)));
    EXPECT_LE(auto_error, BalancedQuantizationError(h, c.threshold, 128));
  }
  // Without balanced counts (a histogram rebuilt from its bins) the score is the pooled one.
  QFUSE_ASSERT_OK_AND_ASSIGN(
      const AbsHistogram plain,
      AbsHistogram::FromBins(std::vector<int64_t>(h.bins().begin(), h.bins().end()), h.bin_width(), h.min(), h.max()));
  QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice plain_auto,
                             ChooseThreshold(plain, Options(CalibrationMethod::kAuto)));
  EXPECT_EQ(plain_auto.threshold, pooled.threshold);
}

// auto searches only percentile, max and balanced_mse (mse without balanced counts): entropy's
// and mse's thresholds are edges the balanced_mse search already scores. Its score is still no
// worse than any method's, on random plain histograms and on sample-balanced ones.
TEST(ThresholdsTest, AutoScoresNoWorseThanEveryMethod) {
  std::vector<AbsHistogram> histograms;
  for (auto& [c, h] : RandomCases(9)) histograms.push_back(std::move(h));
  for (const int outliers : {0, 1, 2}) histograms.push_back(WithOutlierSamples(40 + outliers, outliers));
  for (size_t i = 0; i < histograms.size(); ++i) {
    const AbsHistogram& h = histograms[i];
    for (const int levels : {128, 256}) {
      SCOPED_TRACE(::testing::Message() << "histogram " << i << " levels " << levels);
      QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice chosen, ChooseThreshold(h, Options(CalibrationMethod::kAuto, levels)));
      const double auto_error = BalancedQuantizationError(h, chosen.threshold, levels);
      for (const CalibrationMethod method : kAllMethods) {
        SCOPED_TRACE(CalibrationMethodName(method));
        QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice c, ChooseThreshold(h, Options(method, levels)));
        const double error = BalancedQuantizationError(h, c.threshold, levels);
        EXPECT_LE(auto_error, error * (1 + 1e-12));
        // A tie goes to the larger threshold.
        if (error == auto_error) EXPECT_GE(chosen.threshold, c.threshold);
      }
    }
  }
}

// Saturating activations (tanh, sigmoid) streamed in batches whose first one is smaller, so the
// range grows and max|x| ends inside the top bin, not on an edge: there the balanced_mse
// search's own least edge can lie at or above max|x|, where AtEdge clamps it and the score is
// worse than at an edge just below (a case a review found; it made auto worse than mse or
// entropy before auto also took the search's least edge below max|x|).
TEST(ThresholdsTest, AutoScoresNoWorseThanEveryMethodOnSaturatedGrownRanges) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> normal(0, 1);
  const AbsHistogram::PartRunner inline_run = [](int parts, const std::function<void(int)>& fn) {
    for (int k = 0; k < parts; ++k) fn(k);
  };
  for (int trial = 0; trial < 120; ++trial) {
    const bool tanh_like = trial % 2 == 0;
    const int samples = 8 + static_cast<int>(u(rng) * 56);
    const int per_batch = 1 + static_cast<int>(u(rng) * 12);
    const int values = 256 + static_cast<int>(u(rng) * 3000);
    const double gain = 1 + 3 * u(rng);
    const double first_batch_scale = 0.5 + 0.5 * u(rng);
    AbsHistogram h;
    for (int start = 0; start < samples; start += per_batch) {
      const int count = std::min(per_batch, samples - start);
      std::vector<float> batch(static_cast<size_t>(count) * values);
      for (int s = 0; s < count; ++s) {
        const double spread = 0.5 + u(rng);
        const double scale = start == 0 ? first_batch_scale : 1.0;
        for (int i = 0; i < values; ++i) {
          const double z = normal(rng) * gain * spread;
          batch[static_cast<size_t>(s) * values + i] =
              static_cast<float>(scale * (tanh_like ? std::tanh(z) : 1 / (1 + std::exp(-z))));
        }
      }
      h.AddSamples(batch, count, start, 1, inline_run);
    }
    h.FinishSamples();
    for (const int levels : {128, 256}) {
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " levels " << levels);
      QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice chosen, ChooseThreshold(h, Options(CalibrationMethod::kAuto, levels)));
      const double auto_error = BalancedQuantizationError(h, chosen.threshold, levels);
      for (const CalibrationMethod method : kAllMethods) {
        QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice c, ChooseThreshold(h, Options(method, levels)));
        EXPECT_LE(auto_error, BalancedQuantizationError(h, c.threshold, levels) * (1 + 1e-9))
            << CalibrationMethodName(method);
      }
    }
  }
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
