#include "calib/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "absl/base/casts.h"
#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::calib {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

AbsHistogram Make(int num_bins) {
  absl::StatusOr<AbsHistogram> h = AbsHistogram::Create(num_bins);
  EXPECT_TRUE(h.ok()) << h.status();
  return *std::move(h);
}

int64_t Sum(absl::Span<const int64_t> bins) {
  int64_t s = 0;
  for (const int64_t b : bins) s += b;
  return s;
}

TEST(AbsHistogramTest, StartsEmptyWithUnsetWidth) {
  const AbsHistogram h;
  EXPECT_EQ(h.num_bins(), 4096);
  EXPECT_EQ(h.bin_width(), 0.0f);
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.max_abs(), 0.0f);
  EXPECT_EQ(Sum(h.bins()), 0);
}

TEST(AbsHistogramTest, CreateRejectsNonPositiveBinCount) {
  EXPECT_EQ(AbsHistogram::Create(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AbsHistogram::Create(-3).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AbsHistogramTest, FirstBatchSetsTheSmallestPowerOfTwoWidthAboveItsMaxAbs) {
  AbsHistogram h = Make(8);
  h.Add(std::vector<float>{1.0f, -2.0f, 3.0f, -4.0f, 0.5f, -7.25f});
  EXPECT_EQ(h.bin_width(), 1.0f);  // 8 * 1 > 7.25 >= 8 * 0.5
  EXPECT_EQ(h.range(), 8.0);
  // 0.5 | 1 | -2 | 3 | -4 | - | - | -7.25
  EXPECT_THAT(h.bins(), ElementsAre(1, 1, 1, 1, 1, 0, 0, 1));
  EXPECT_EQ(h.count(), 6);
  EXPECT_EQ(h.min(), -7.25f);
  EXPECT_EQ(h.max(), 3.0f);
  EXPECT_EQ(h.max_abs(), 7.25f);
  // A max of exactly num_bins * 2^e takes the next width: no value sits on the top edge.
  AbsHistogram top = Make(8);
  top.Add(std::vector<float>{8.0f, 1.9f});
  EXPECT_EQ(top.bin_width(), 2.0f);
  EXPECT_THAT(top.bins(), ElementsAre(1, 0, 0, 0, 1, 0, 0, 0));
}

TEST(AbsHistogramTest, NegativeMaxSetsRange) {
  AbsHistogram h = Make(4);
  h.Add(std::vector<float>{-1.5f, 0.25f});
  EXPECT_EQ(h.bin_width(), 0.5f);
  EXPECT_THAT(h.bins(), ElementsAre(1, 0, 0, 1));
  EXPECT_EQ(h.max_abs(), 1.5f);
}

TEST(AbsHistogramTest, ZerosAccumulateInBinZeroUntilANonZeroArrives) {
  AbsHistogram h = Make(8);
  h.Add(std::vector<float>{0.0f, -0.0f, 0.0f});
  EXPECT_EQ(h.bin_width(), 0.0f);
  EXPECT_THAT(h.bins(), ElementsAre(3, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_EQ(h.count(), 3);
  EXPECT_EQ(h.max_abs(), 0.0f);
  h.Add(std::vector<float>{0.0f, 4.0f, 1.2f});
  EXPECT_EQ(h.bin_width(), 1.0f);
  EXPECT_THAT(h.bins(), ElementsAre(4, 1, 0, 0, 1, 0, 0, 0));
  EXPECT_EQ(h.count(), 6);
}

TEST(AbsHistogramTest, GrowthUsesSmallestPowerOfTwoAndMergesBinsExactly) {
  AbsHistogram h = Make(8);
  h.Add(std::vector<float>{7.5f});  // width 1, bin 7
  h.Add(std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f});
  ASSERT_THAT(h.bins(), ElementsAre(1, 1, 1, 1, 1, 1, 1, 2));
  // 20 needs a range > 20: k = 3 would do (24) but k is a power of two: 4 -> width 4, range 32.
  h.Add(std::vector<float>{-20.0f});
  EXPECT_EQ(h.bin_width(), 4.0f);
  EXPECT_EQ(h.range(), 32.0);
  // new bin 0 = old 0..3 (4 values), new bin 1 = old 4..7 (5 values), 20 -> bin 5.
  EXPECT_THAT(h.bins(), ElementsAre(4, 5, 0, 0, 0, 1, 0, 0));
  EXPECT_EQ(h.count(), 10);
  EXPECT_EQ(Sum(h.bins()), 10);
  EXPECT_EQ(h.min(), -20.0f);
  EXPECT_EQ(h.max(), 7.5f);
  // Later values bin at the new width.
  h.Add(std::vector<float>{3.9f, 4.0f, 31.0f});
  EXPECT_THAT(h.bins(), ElementsAre(5, 6, 0, 0, 0, 1, 0, 1));
  EXPECT_EQ(h.max(), 31.0f);
  // A value equal to the range grows it: width 8, pairs merged, 32 -> bin 4.
  h.Add(std::vector<float>{32.0f});
  EXPECT_EQ(h.bin_width(), 8.0f);
  EXPECT_THAT(h.bins(), ElementsAre(11, 0, 1, 1, 1, 0, 0, 0));
}

TEST(AbsHistogramTest, GrowthBeyondBinCountMergesEverythingIntoBinZero) {
  AbsHistogram h = Make(4);
  h.Add(std::vector<float>{3.5f, 1.0f, 2.0f});  // width 1: bins 1, 2, 3
  ASSERT_THAT(h.bins(), ElementsAre(0, 1, 1, 1));
  h.Add(std::vector<float>{100.0f});  // k = 32 (4 * 32 = 128 > 100), width 32
  EXPECT_EQ(h.bin_width(), 32.0f);
  EXPECT_THAT(h.bins(), ElementsAre(3, 0, 0, 1));
}

TEST(AbsHistogramTest, NonFiniteValuesAreCountedNotBinned) {
  AbsHistogram h = Make(4);
  h.Add(std::vector<float>{kNaN, kInf});
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.bin_width(), 0.0f);
  EXPECT_EQ(h.nonfinite_count(), 2);
  h.Add(std::vector<float>{1.0f, kNaN, -kInf, 2.0f, kInf});
  EXPECT_EQ(h.count(), 2);
  EXPECT_EQ(h.nonfinite_count(), 5);
  EXPECT_EQ(h.bin_width(), 1.0f);
  EXPECT_EQ(h.min(), 1.0f);
  EXPECT_EQ(h.max(), 2.0f);
  EXPECT_THAT(h.bins(), ElementsAre(0, 1, 1, 0));
}

// The range pass (eight lanes per instruction where AVX2 is allowed; the test command runs it
// under each ISA cap) against a plain loop keeping the first of equal values: the extremes bit
// for bit (a zero extreme takes the first zero's sign) and the non-finite count, for every length
// up to 40 (whole vectors and tails) and values with NaN, +-Inf, +-0 and FLT_MAX in many places.
TEST(AbsHistogramTest, RangePassKeepsTheFirstZerosSignAndSkipsNonFinite) {
  std::mt19937 rng(5);
  const float kMax = std::numeric_limits<float>::max();
  const std::vector<float> pool = {0.0f, -0.0f, kNaN, kInf, -kInf, 1.5f, -2.0f, kMax, -kMax, 0.25f};
  for (int n = 0; n <= 40; ++n) {
    for (int trial = 0; trial < 30; ++trial) {
      std::vector<float> values(n);
      for (float& v : values) {
        // Mostly one kind per trial (all zeros, all non-finite, ...), some of everything.
        const int pick = static_cast<int>(rng() % (trial < 10 ? 2 : trial < 20 ? 5 : pool.size()));
        v = pool[(pick + trial) % pool.size()];
      }
      float lo = kMax, hi = std::numeric_limits<float>::lowest();
      int64_t nonfinite = 0;
      for (const float v : values) {
        if (!std::isfinite(v)) {
          ++nonfinite;
          continue;
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      AbsHistogram h = Make(8);
      h.Add(values);
      SCOPED_TRACE(::testing::Message() << "n " << n << " trial " << trial);
      EXPECT_EQ(h.nonfinite_count(), nonfinite);
      EXPECT_EQ(h.count(), n - nonfinite);
      if (h.count() > 0) {
        EXPECT_EQ(absl::bit_cast<uint32_t>(h.min()), absl::bit_cast<uint32_t>(lo));
        EXPECT_EQ(absl::bit_cast<uint32_t>(h.max()), absl::bit_cast<uint32_t>(hi));
      }
    }
  }
}

TEST(AbsHistogramTest, TinyRangeKeepsANormalBinWidth) {
  AbsHistogram h = Make(2048);
  h.Add(std::vector<float>{1e-40f});
  EXPECT_EQ(h.bin_width(), std::numeric_limits<float>::min());
  EXPECT_EQ(h.bins()[0], 1);
}

TEST(AbsHistogramTest, MergeOnSharedGridEqualsSequentialAdds) {
  const std::vector<float> seed = {8.0f};
  const std::vector<float> batch_a = {1.5f, -2.5f, 7.9f};
  const std::vector<float> batch_b = {-30.0f, 5.0f};  // grows to width 4
  const std::vector<float> batch_c = {0.0f, kNaN, 0.7f};

  AbsHistogram sequential = Make(8);
  for (const auto* batch : {&seed, &batch_a, &batch_b, &batch_c}) sequential.Add(*batch);

  AbsHistogram main = Make(8);
  main.Add(seed);
  AbsHistogram t1 = main.EmptyLike();
  AbsHistogram t2 = main.EmptyLike();
  AbsHistogram t3 = main.EmptyLike();
  t1.Add(batch_a);
  t2.Add(batch_b);
  t3.Add(batch_c);
  EXPECT_EQ(t2.bin_width(), 4.0f);
  QFUSE_ASSERT_OK(main.Merge(t1));
  QFUSE_ASSERT_OK(main.Merge(t2));  // coarser: main grows
  QFUSE_ASSERT_OK(main.Merge(t3));  // finer (width 2): its bins merge 2 at a time
  EXPECT_EQ(main.bin_width(), sequential.bin_width());
  EXPECT_THAT(main.bins(), ElementsAreArray(sequential.bins()));
  // Width 4: [0, 4) holds 1.5, 2.5, 0, 0.7; [4, 8) holds 5 and 7.9; 8 -> bin 2; 30 -> bin 7.
  EXPECT_THAT(main.bins(), ElementsAre(4, 2, 1, 0, 0, 0, 0, 1));
  EXPECT_EQ(main.count(), 8);
  EXPECT_EQ(main.nonfinite_count(), 1);
  EXPECT_EQ(main.min(), -30.0f);
  EXPECT_EQ(main.max(), 8.0f);
}

// Bits of a float: tells -0 from +0.
uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

void ExpectSameHistogram(const AbsHistogram& got, const AbsHistogram& want) {
  EXPECT_EQ(got.bin_width(), want.bin_width());
  EXPECT_THAT(got.bins(), ElementsAreArray(want.bins()));
  EXPECT_EQ(got.count(), want.count());
  EXPECT_EQ(got.nonfinite_count(), want.nonfinite_count());
  EXPECT_EQ(Bits(got.min()), Bits(want.min()));
  EXPECT_EQ(Bits(got.max()), Bits(want.max()));
}

// Part runners: in order, in reverse (as threads may finish), and one std::thread per part.
const AbsHistogram::PartRunner kInOrder = [](int parts, const std::function<void(int)>& fn) {
  for (int k = 0; k < parts; ++k) fn(k);
};
const AbsHistogram::PartRunner kBackward = [](int parts, const std::function<void(int)>& fn) {
  for (int k = parts - 1; k >= 0; --k) fn(k);
};
// A sample index that comes again (a tensor whose leading dim matches the batch in some
// batches only) keeps joining the open group; a group is weighed once it holds 32 samples, so
// 40 one-sample calls with index 0 give two groups (32 and 8) of identical samples, each value
// weighing 1 / (its sample's mean square), and never a group beyond 32 (ASan in CI's sanitizer
// stage).
TEST(AbsHistogramTest, RepeatedSampleIndicesNeverGrowAGroupBeyond32) {
  AbsHistogram h;
  const std::vector<float> sample = {1.f, 2.f, 2.f, 3.f};  // mean square (1 + 4 + 4 + 9) / 4 = 4.5
  for (int call = 0; call < 40; ++call) h.AddSamples(sample, 1, 0, 1, kInOrder);
  h.FinishSamples();
  ASSERT_EQ(h.balanced_bins().size(), h.bins().size());
  double total = 0;
  for (double b : h.balanced_bins()) total += b;
  EXPECT_NEAR(total, 40 * 4 / 4.5, 1e-12);
  EXPECT_EQ(h.count(), 160);
}

const AbsHistogram::PartRunner kOnThreads = [](int parts, const std::function<void(int)>& fn) {
  std::vector<std::thread> workers;
  for (int k = 0; k < parts; ++k) workers.emplace_back(fn, k);
  for (std::thread& w : workers) w.join();
};

// AddInParts against Add over a run of batches: zeros only first (width unset), then growing
// ranges, NaN / Inf, and zeros of both signs whose first occurrence decides the sign of min()
// and max(); 1-4 parts, run in order and in reverse (as threads may finish), and a batch too
// small to split.
TEST(AbsHistogramTest, AddInPartsEqualsAdd) {
  std::mt19937 rng(11);
  const int64_t big = 4 * AbsHistogram::kMinPartValues + 77;  // four parts at most
  std::vector<std::vector<float>> batches;
  batches.push_back(std::vector<float>(big, 0.0f));
  batches.back()[5] = -0.0f;  // a -0 before any +0 would be min and max: here +0 comes first
  for (int b = 0; b < 6; ++b) {
    std::normal_distribution<float> normal(0.f, std::ldexp(1.f, 2 * b));
    std::vector<float>& v = batches.emplace_back(b == 3 ? 1000 : big);
    for (float& x : v) x = std::max(normal(rng), b % 2 == 0 ? 0.0f : -1e30f);  // even batches: ReLU-like
    if (b == 1) v[v.size() - 1] = kNaN;
    if (b == 2) v[v.size() / 2] = -kInf;
  }
  // Ones, then zeros from the middle on, the first of them -0: min() is the first zero seen.
  std::vector<float> zeros(big, 0.0f);
  for (size_t i = 0; i < zeros.size() / 2 + 3; ++i) zeros[i] = 1.0f;
  zeros[zeros.size() / 2 + 3] = -0.0f;
  // Minus ones, then zeros from the middle on: -0 up to just before the last quarter, +0 after,
  // so that with four parts the third part's max is -0 and the fourth's +0; max() is -0.
  std::vector<float> negative(big, -1.0f);
  for (size_t i = negative.size() / 2 + 5; i < negative.size(); ++i) {
    negative[i] = i < negative.size() * 3 / 4 - 10 ? -0.0f : 0.0f;
  }
  for (int parts = 1; parts <= 4; ++parts) {
    for (const auto* run : {&kInOrder, &kBackward, &kOnThreads}) {
      SCOPED_TRACE(::testing::Message() << parts << " parts, "
                                        << (run == &kInOrder    ? "forward"
                                            : run == &kBackward ? "backward"
                                                                : "threads"));
      AbsHistogram want = Make(2048), got = Make(2048);
      for (const std::vector<float>& v : batches) {
        want.Add(v);
        got.AddInParts(v, parts, *run);
        ExpectSameHistogram(got, want);
      }
      for (const std::vector<float>* v : {&zeros, &negative}) {
        AbsHistogram one_want = Make(2048), one_got = Make(2048);
        one_want.Add(*v);
        one_got.AddInParts(*v, parts, *run);
        ExpectSameHistogram(one_got, one_want);
      }
    }
  }
}

// Hand-computed: 8 bins; samples 0-4 of four values each, mean squares 1, 0.25, 16, 0 and 4;
// their group's (open until FinishSamples) lower median is 1, so the weights are 1 / max(E, 1):
// 1, 1, 1/16, 0 (an all-zero sample adds nothing) and 1/4. Max 4: width 1 (range 8), so 0.5 ->
// bin 0, 1 -> bin 1, 2 -> bin 2, 4 -> bin 4.
// A second batch, sample 32 (the next group), of 5 values is not split into 2 samples
// (5 % 2 != 0): one sample, mean square 64 / 5, weight 5 / 64; its max 8 (== the range) doubles
// the width, merging the balanced counts as the counts.
TEST(AbsHistogramTest, AddSamplesWeighsEachSampleAgainstItsGroupsMedian) {
  AbsHistogram h = Make(8), plain = Make(8);
  const std::vector<float> batch = {1, 1, -1, 1, 0.5f, -0.5f, 0.5f, 0.5f, 4, 4, -4, 4, 0, 0, 0, 0, 2, -2, 2, 2};
  h.AddSamples(batch, 5, 0, 1, kInOrder);
  plain.Add(batch);
  ExpectSameHistogram(h, plain);
  EXPECT_TRUE(h.balanced_bins().empty());  // the group is open
  h.FinishSamples();
  EXPECT_THAT(h.balanced_bins(), ElementsAre(4.0, 4.0, 1.0, 0.0, 0.25, 0.0, 0.0, 0.0));
  const std::vector<float> second = {8, 0, 0, 0, 0};
  h.AddSamples(second, 2, 32, 1, kInOrder);
  plain.Add(second);
  ExpectSameHistogram(h, plain);
  h.FinishSamples();
  EXPECT_EQ(h.bin_width(), 2.0f);
  EXPECT_THAT(h.balanced_bins(), ElementsAre(8.0 + 4 * 5.0 / 64, 1.0, 0.25, 0.0, 5.0 / 64, 0.0, 0.0, 0.0));
  // Values added without sample weights drop the balanced counts.
  h.Add(second);
  EXPECT_TRUE(h.balanced_bins().empty());
}

// The same 96 samples (three groups; a range that grows at sample 48; quiet and outsized
// samples) in batches of 32, 1, 7 and 48 samples: the same grid and counts, bit for bit, and the
// same balanced counts up to the rounding of double sums (a batching whose first width is finer
// merges its weighed groups' bins in another order). Batches of fewer samples than a group keep
// the group open (its rows re-binned when the range grows) and weigh it against the same median.
// Each batching's first batch has its own max, so its first width differs; the final grid does
// not (histogram.h).
TEST(AbsHistogramTest, AddSamplesDoesNotDependOnTheBatchSize) {
  std::mt19937 rng(9);
  const int per_sample = 300;
  std::vector<float> values(96 * per_sample);
  // Samples 48 on (64x) grow the range in every batching.
  for (int s = 0; s < 96; ++s) {
    std::normal_distribution<float> normal(0.f, s < 48 ? 1.0f : 64.0f);
    const float scale = s % 29 == 3 ? 1e-3f : s % 31 == 7 ? 100.0f / 64 : 1.0f;
    for (int i = 0; i < per_sample; ++i) values[s * per_sample + i] = scale * normal(rng);
  }
  auto run = [&](int batch) {
    AbsHistogram h = Make(1000);
    for (int first = 0; first < 96; first += batch) {
      const int count = std::min(batch, 96 - first);
      h.AddSamples(absl::MakeConstSpan(values).subspan(first * per_sample, count * per_sample), count, first, 1,
                   kInOrder);
    }
    h.FinishSamples();
    return h;
  };
  const AbsHistogram want = run(32);
  for (const int batch : {1, 7, 48}) {
    SCOPED_TRACE(::testing::Message() << "batches of " << batch);
    const AbsHistogram got = run(batch);
    ExpectSameHistogram(got, want);
    ASSERT_EQ(got.balanced_bins().size(), want.balanced_bins().size());
    for (size_t b = 0; b < want.balanced_bins().size(); ++b) {
      EXPECT_NEAR(got.balanced_bins()[b], want.balanced_bins()[b], 1e-12 * want.balanced_bins()[b]) << "bin " << b;
    }
  }
  EXPECT_EQ(want.balanced_bins().size(), 1000u);
  // The range grew after the first batch (so open rows were re-binned in the smaller batches).
  AbsHistogram first = Make(1000);
  first.Add(absl::MakeConstSpan(values).subspan(0, 32 * per_sample));
  EXPECT_GT(want.bin_width(), first.bin_width());
}

// On random sample-major batches (growing ranges, a NaN, 8 samples of ~33k values): the counts
// are Add's bit for bit, and the balanced counts are the same bits for 1-4 parts run in order,
// in reverse and on threads. Merging two such histograms gives the balanced counts of adding
// both (weights powers of two here, so every sum is exact in any order).
TEST(AbsHistogramTest, AddSamplesEqualsAddAndDoesNotDependOnParts) {
  std::mt19937 rng(3);
  const int64_t per_sample = AbsHistogram::kMinPartValues + 13;
  std::vector<std::vector<float>> batches;
  for (int b = 0; b < 4; ++b) {
    std::normal_distribution<float> normal(0.f, std::ldexp(1.f, 3 * b));
    std::vector<float>& v = batches.emplace_back(8 * per_sample);
    for (float& x : v) x = normal(rng);
    for (int64_t i = 0; i < per_sample; ++i) v[3 * per_sample + i] *= 64.0f;  // an outlier sample
  }
  batches[2][5] = kNaN;
  AbsHistogram reference = Make(2048);
  for (size_t b = 0; b < batches.size(); ++b) reference.AddSamples(batches[b], 8, 8 * b, 1, kInOrder);
  const std::vector<double> want(reference.balanced_bins().begin(), reference.balanced_bins().end());
  EXPECT_GT(std::count_if(want.begin(), want.end(), [](double c) { return c > 0; }), 100);
  for (int parts = 1; parts <= 4; ++parts) {
    for (const auto* run : {&kInOrder, &kBackward, &kOnThreads}) {
      SCOPED_TRACE(::testing::Message() << parts << " parts");
      AbsHistogram got = Make(2048), plain = Make(2048);
      for (size_t b = 0; b < batches.size(); ++b) {
        got.AddSamples(batches[b], 8, 8 * b, parts, *run);
        plain.Add(batches[b]);
        ExpectSameHistogram(got, plain);
      }
      EXPECT_THAT(got.balanced_bins(), ElementsAreArray(want));
    }
  }
  // Merge, with values whose weights and counts sum exactly: samples of constant magnitude.
  auto constant_samples = [](std::initializer_list<float> magnitudes) {
    std::vector<float> v;
    for (const float m : magnitudes) v.insert(v.end(), 4, m);
    return v;
  };
  const std::vector<float> first = constant_samples({1, 2, 0.5f}), second = constant_samples({16, 1, 4, 2});
  AbsHistogram both = Make(64), a = Make(64);
  both.AddSamples(first, 3, 0, 1, kInOrder);
  both.AddSamples(second, 4, 32, 1, kInOrder);  // the next group
  both.FinishSamples();
  a.AddSamples(first, 3, 0, 1, kInOrder);
  AbsHistogram b = a.EmptyLike();
  b.AddSamples(second, 4, 32, 1, kInOrder);
  EXPECT_EQ(a.Merge(b).code(), absl::StatusCode::kFailedPrecondition);  // b's group is open
  b.FinishSamples();
  QFUSE_ASSERT_OK(a.Merge(b));
  ExpectSameHistogram(a, both);
  EXPECT_THAT(a.balanced_bins(), ElementsAreArray(both.balanced_bins()));
  EXPECT_FALSE(a.balanced_bins().empty());
  // A failed Merge leaves this histogram as it was; merging one without balanced counts drops them.
  std::vector<int64_t> one(64, 0);
  one[63] = 1;
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram other_grid, AbsHistogram::FromBins(one, 3.0f / 64, 0.0f, 2.99f));
  const std::vector<double> before(a.balanced_bins().begin(), a.balanced_bins().end());
  EXPECT_EQ(a.Merge(other_grid).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(a.balanced_bins(), ElementsAreArray(before));
  AbsHistogram plain = a.EmptyLike();
  plain.Add(first);
  QFUSE_ASSERT_OK(a.Merge(plain));
  EXPECT_TRUE(a.balanced_bins().empty());
}

TEST(AbsHistogramTest, MergeIntoUnsetWidthAdoptsOtherGridAndKeepsZeros) {
  AbsHistogram zeros = Make(4);
  zeros.Add(std::vector<float>{0.0f, 0.0f});
  AbsHistogram other = Make(4);
  other.Add(std::vector<float>{2.0f, -1.0f});
  QFUSE_ASSERT_OK(zeros.Merge(other));
  EXPECT_EQ(zeros.bin_width(), 1.0f);
  EXPECT_THAT(zeros.bins(), ElementsAre(2, 1, 1, 0));
  EXPECT_EQ(zeros.count(), 4);
  EXPECT_EQ(zeros.min(), -1.0f);

  AbsHistogram more_zeros = Make(4);
  more_zeros.Add(std::vector<float>{-0.0f});
  QFUSE_ASSERT_OK(zeros.Merge(more_zeros));
  EXPECT_THAT(zeros.bins(), ElementsAre(3, 1, 1, 0));

  QFUSE_ASSERT_OK(zeros.Merge(Make(4)));  // empty: no change
  EXPECT_EQ(zeros.count(), 5);
}

// Histograms Added to apart always merge (their widths are powers of two); a FromBins width that
// is not a power of two apart from this one's cannot merge exactly.
TEST(AbsHistogramTest, MergeRejectsMismatchedGrids) {
  AbsHistogram a = Make(8);
  a.Add(std::vector<float>{8.0f});  // width 2
  AbsHistogram b = Make(8);
  b.Add(std::vector<float>{3.0f});  // width 0.5
  QFUSE_ASSERT_OK(a.Merge(b));
  EXPECT_THAT(a.bins(), ElementsAre(0, 1, 0, 0, 1, 0, 0, 0));
  std::vector<int64_t> one(8, 0);
  one[7] = 1;
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram odd, AbsHistogram::FromBins(one, 0.375f, 0.0f, 2.99f));
  EXPECT_EQ(a.Merge(odd).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.count(), 2);  // unchanged
  AbsHistogram c = Make(4);
  c.Add(std::vector<float>{8.0f});
  EXPECT_EQ(a.Merge(c).code(), absl::StatusCode::kInvalidArgument);
}

TEST(AbsHistogramTest, FromBinsValidates) {
  QFUSE_ASSERT_OK_AND_ASSIGN(const AbsHistogram h, AbsHistogram::FromBins({1, 0, 2, 1}, 0.5f, -1.75f, 1.5f));
  EXPECT_EQ(h.count(), 4);
  EXPECT_EQ(h.max_abs(), 1.75f);
  EXPECT_EQ(h.range(), 2.0);
  EXPECT_EQ(AbsHistogram::FromBins({}, 1.0f, 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AbsHistogram::FromBins({1, -1}, 1.0f, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AbsHistogram::FromBins({1, 1}, 0.0f, 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AbsHistogram::FromBins({1, 1}, 1.0f, 0, 2.5f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AbsHistogram::FromBins({1, 1}, kNaN, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AbsHistogram::FromBins({1, 1}, 1.0f, 1, 0).status().code(), absl::StatusCode::kInvalidArgument);
  // max |x| must lie below the range, as Add keeps it: a value at the top edge would sit in the
  // last bin here and in the bin above it once a later Add grew the width.
  EXPECT_EQ(AbsHistogram::FromBins({0, 1}, 1.0f, 0, 2.0f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AbsHistogram::FromBins({0, 1}, 1.0f, -2.0f, 0).status().code(), absl::StatusCode::kInvalidArgument);
  QFUSE_EXPECT_OK(AbsHistogram::FromBins({0, 1}, 1.0f, 0, 1.9999999f).status());
  // A subnormal width: 1 / width is infinite, and so would every later bin index be.
  EXPECT_EQ(AbsHistogram::FromBins(std::vector<int64_t>(8, 0), 1e-39f, 0, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AbsHistogram::FromBins({1, 1}, -1.0f, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  QFUSE_ASSERT_OK_AND_ASSIGN(AbsHistogram smallest, AbsHistogram::FromBins(std::vector<int64_t>(8, 0),
                                                                           std::numeric_limits<float>::min(), 0, 0));
  smallest.Add(std::vector<float>{0.0f, 1e-40f, 1.0f});  // the width grows to cover 1
  EXPECT_EQ(smallest.count(), 3);
  EXPECT_EQ(smallest.bin_width(), 0.25f);  // 8 bins of 2^-2 cover 1 strictly (8 of 2^-3 do not)
  EXPECT_EQ(smallest.bins()[0], 2);
  EXPECT_EQ(smallest.bins()[4], 1);
}

// Many batches with growing scales, against a direct binning of all values at the final width.
// Widths are powers of two, so floor(|x| / w) re-binned k at a time equals floor(|x| / (k w))
// even in float arithmetic, and no value sits on a top edge: every value lands where direct
// binning puts it, the first batch's max 1.0 (then range 2) included.
TEST(AbsHistogramTest, ManyGrowingBatchesMatchDirectBinningAndUseConstantMemory) {
  constexpr int kBins = 2048;
  AbsHistogram h = Make(kBins);
  const size_t capacity = h.bins().size();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> all;
  std::vector<float> batch;
  batch.push_back(1.0f);  // the first batch's max: width 2^-10, range 2
  for (int b = 0; b < 200; ++b) {
    const float scale = 0.1f * static_cast<float>(1 + b / 20);  // max |x| grows to ~5
    while (batch.size() < 1000) {
      const float x = scale * normal(rng);
      batch.push_back(b == 0 ? std::clamp(x, -0.99f, 0.99f) : x);
    }
    h.Add(batch);
    all.insert(all.end(), batch.begin(), batch.end());
    batch.clear();
  }
  ASSERT_EQ(h.bins().size(), capacity);
  EXPECT_EQ(h.count(), static_cast<int64_t>(all.size()));
  EXPECT_EQ(Sum(h.bins()), h.count());
  ASSERT_GT(h.bin_width(), std::ldexp(1.0f, -10));  // it grew
  std::vector<int64_t> direct(kBins, 0);
  const float inv = 1.0f / h.bin_width();
  for (const float x : all) ++direct[static_cast<int>(std::fabs(x) * inv)];
  EXPECT_THAT(h.bins(), ElementsAreArray(direct));
}

}  // namespace
}  // namespace qfuse::calib
