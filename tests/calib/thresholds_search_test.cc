// calib/thresholds: each search against its definition (the header's KL and squared error, bin
// by bin) on random activation-like and sample-balanced histograms, and auto's score against
// every method's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "calib/histogram.h"
#include "calib/thresholds.h"
#include "gtest/gtest.h"
#include "tests/calib/thresholds_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::calib {
namespace {

using thresholds_test::kAllMethods;
using thresholds_test::Options;

// The largest float below 1: max |x| of fixtures on [0, 1), which a histogram range must exceed.
constexpr float kBelowOne = 0.99999994f;

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
      case 0:
        x = std::fabs(normal(rng)) * scale;
        break;
      case 1:
        x = exponential(rng) * scale;
        break;
      case 2:  // a ReLU's zeros
        x = u(rng) < 0.5 ? 0 : std::fabs(normal(rng)) * scale;
        break;
      case 3:  // a non-zero spike
        x = u(rng) < 0.3 ? 0.4 : std::fabs(normal(rng)) * scale * 0.5;
        break;
      case 4:
        x = std::pow(u(rng), 4.0);
        break;
      default:  // far outliers
        x = u(rng) < 0.999 ? std::fabs(normal(rng)) * scale * 0.2 : u(rng);
        break;
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
      QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice chosen,
                                 ChooseThreshold(h, Options(CalibrationMethod::kAuto, levels)));
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
      QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice chosen,
                                 ChooseThreshold(h, Options(CalibrationMethod::kAuto, levels)));
      const double auto_error = BalancedQuantizationError(h, chosen.threshold, levels);
      for (const CalibrationMethod method : kAllMethods) {
        QFUSE_ASSERT_OK_AND_ASSIGN(const ThresholdChoice c, ChooseThreshold(h, Options(method, levels)));
        EXPECT_LE(auto_error, BalancedQuantizationError(h, c.threshold, levels) * (1 + 1e-9))
            << CalibrationMethodName(method);
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::calib
