#include "calib/thresholds.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "runtime/cpu_isa.h"

namespace qfuse::calib {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct MethodName {
  CalibrationMethod method;
  absl::string_view name;
};
constexpr MethodName kMethodNames[] = {
    {CalibrationMethod::kEntropy, "entropy"},
    {CalibrationMethod::kPercentile, "percentile"},
    {CalibrationMethod::kMse, "mse"},
    {CalibrationMethod::kMax, "max"},
    {CalibrationMethod::kBalancedMse, "balanced_mse"},
    {CalibrationMethod::kAuto, "auto"},
};

absl::Status Validate(const AbsHistogram& histogram, const ThresholdOptions& options) {
  if (options.num_quantized_bins < 2 || options.num_quantized_bins > histogram.num_bins()) {
    return absl::InvalidArgumentError(absl::StrCat("num_quantized_bins must be in [2, ", histogram.num_bins(),
                                                   "] (the histogram's bin count), got ", options.num_quantized_bins));
  }
  if (!(options.percentile > 0 && options.percentile <= 100)) {
    return absl::InvalidArgumentError(absl::StrCat("percentile must be in (0, 100], got ", options.percentile));
  }
  if (histogram.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot choose a threshold from an empty histogram (no finite values; ",
                     histogram.nonfinite_count(), " non-finite)"));
  }
  return absl::OkStatus();
}

// T = min(edge * w, max|x|), never below kMinThreshold.
ThresholdChoice AtEdge(const AbsHistogram& histogram, int edge) {
  const double t =
      std::min(static_cast<double>(edge) * histogram.bin_width(), static_cast<double>(histogram.max_abs()));
  return ThresholdChoice{std::max(static_cast<float>(t), kMinThreshold), edge};
}

int MaxEdge(absl::Span<const int64_t> c) {
  int last = static_cast<int>(c.size()) - 1;
  while (last > 0 && c[last] == 0) --last;
  return last + 1;
}

int PercentileEdge(absl::Span<const int64_t> c, int64_t total, double percentile) {
  const double target = percentile / 100.0 * static_cast<double>(total);
  const int n = static_cast<int>(c.size());
  int64_t cumulative = 0;
  for (int j = 1; j <= n; ++j) {
    cumulative += c[j - 1];
    if (static_cast<double>(cumulative) >= target) return j;
  }
  return n;  // Not reached: the full sum equals total >= target.
}

// The per-bin sums an entropy search reads: prefix[j] the count of bins [0, j), nonempty[j]
// the non-empty bins among them, and p_log_p[j] the sum of p_k * ln(p_k) over the non-empty
// bins k < j, p_k = c[k] / total.
struct EntropySums {
  std::vector<int64_t> prefix, nonempty;
  std::vector<double> p_log_p;
};

EntropySums SumsOf(const std::vector<int64_t>& c) {
  const int n = static_cast<int>(c.size());
  EntropySums s;
  s.prefix.assign(n + 1, 0);
  s.nonempty.assign(n + 1, 0);
  s.p_log_p.assign(n + 1, 0.0);
  int64_t total = 0;
  for (const int64_t v : c) total += v;
  for (int j = 0; j < n; ++j) {
    s.prefix[j + 1] = s.prefix[j] + c[j];
    s.nonempty[j + 1] = s.nonempty[j] + (c[j] > 0 ? 1 : 0);
    const double p = static_cast<double>(c[j]) / static_cast<double>(total);
    s.p_log_p[j + 1] = s.p_log_p[j] + (c[j] > 0 ? p * std::log(p) : 0.0);
  }
  return s;
}

// Group g of the entropy candidate keeping bins [0, i): bins [lo, hi), those j with
// floor(j * M / i) == g, and how many of them are non-empty and how many values they hold.
struct EntropyGroup {
  int64_t lo, hi, nonempty, count;
};
EntropyGroup GroupOf(const EntropySums& s, int64_t g, int i, int num_levels) {
  EntropyGroup group;
  group.lo = (g * i + num_levels - 1) / num_levels;
  group.hi = ((g + 1) * i + num_levels - 1) / num_levels;
  group.nonempty = s.nonempty[group.hi] - s.nonempty[group.lo];
  group.count = s.prefix[group.hi] - s.prefix[group.lo];
  return group;
}

// The counts a candidate keeping bins [0, i) splits the values into.
struct EntropyCandidate {
  int64_t total, kept, tail;  // all values; those in bins [0, i); the clipped rest
};
EntropyCandidate CandidateOf(const EntropySums& s, int i) {
  return EntropyCandidate{s.prefix.back(), s.prefix[i], s.prefix.back() - s.prefix[i]};
}

// KL(P || Q) for the entropy candidate keeping bins [0, i); see the header. Split as
//   sum_j p_j ln(p_j / q_j) = sum_j p_j ln(p_j) - sum_groups ln(q_g) * (sum of p_j in the group),
// (j over the bins with P > 0; q_j = q_g for every non-empty bin of group g): the first sum is
// a prefix sum with bin i-1 taking the clipped tail, so each candidate costs one logarithm per
// group instead of one per bin.
double EntropyCandidateKl(const std::vector<int64_t>& c, const EntropySums& s, int i, int num_levels) {
  const auto [total, kept, tail] = CandidateOf(s, i);
  if (kept == 0) return kInf;
  if (tail > 0 && c[i - 1] == 0) return kInf;  // P[i-1] = tail > 0 but Q[i-1] = 0.
  const double last = static_cast<double>(c[i - 1] + tail) / static_cast<double>(total);
  double kl = s.p_log_p[i - 1] + (last > 0 ? last * std::log(last) : 0.0);
  for (int64_t g = 0; g < num_levels; ++g) {
    const EntropyGroup group = GroupOf(s, g, i, num_levels);
    if (group.nonempty == 0) continue;
    const double q =
        static_cast<double>(group.count) / static_cast<double>(group.nonempty) / static_cast<double>(kept);
    const int64_t p_count = group.count + (group.hi == i ? tail : 0);
    kl -= std::log(q) * (static_cast<double>(p_count) / static_cast<double>(total));
  }
  return kl;
}

// The same KL term by term (one logarithm per non-empty bin, summed in bin order): the exact
// form that decides between candidates the grouped form cannot tell apart.
double EntropyCandidateKlPerBin(const std::vector<int64_t>& c, const EntropySums& s, int i, int num_levels) {
  const auto [total, kept, tail] = CandidateOf(s, i);
  if (kept == 0) return kInf;
  double kl = 0;
  for (int64_t g = 0; g < num_levels; ++g) {
    const EntropyGroup group = GroupOf(s, g, i, num_levels);
    if (group.nonempty == 0) {
      if (group.hi == i && tail > 0) return kInf;  // P[i-1] = tail > 0 but Q[i-1] = 0.
      continue;
    }
    const double q_value = static_cast<double>(group.count) / static_cast<double>(group.nonempty);
    const double q = q_value / static_cast<double>(kept);
    for (int64_t j = group.lo; j < group.hi; ++j) {
      const int64_t p_count = c[j] + (j == i - 1 ? tail : 0);
      if (p_count == 0) continue;
      if (c[j] == 0) return kInf;  // Only bin i-1 with a clipped tail.
      const double p = static_cast<double>(p_count) / static_cast<double>(total);
      kl += p * std::log(p / q);
    }
  }
  return kl;
}

// Candidates whose grouped KL lies within this of the least are scored again bin by bin, which
// decides the edge. The grouped form's rounding (a difference of two sums of magnitude at most
// ln num_bins, about 8.3) stays far below it, while it leaves exact ties, such as a sparse histogram's
// candidates of KL 0, a residue of about 1e-16 that would break them the wrong way.
constexpr double kEntropyRescoreWindow = 1e-9;

int EntropyEdge(absl::Span<const int64_t> bins, int num_levels, bool skip_zero_spike) {
  std::vector<int64_t> c(bins.begin(), bins.end());
  if (skip_zero_spike && c.size() > 1) c[0] = c[1];
  const int n = static_cast<int>(c.size());
  const EntropySums sums = SumsOf(c);
  std::vector<double> grouped(n + 1, kInf);
  double least = kInf;
  for (int i = num_levels; i <= n; ++i) {
    grouped[i] = EntropyCandidateKl(c, sums, i, num_levels);
    least = std::min(least, grouped[i]);
  }
  double best_kl = kInf;
  int best_edge = n;
  for (int i = num_levels; i <= n; ++i) {
    if (!(grouped[i] <= least + kEntropyRescoreWindow)) continue;
    const double kl = EntropyCandidateKlPerBin(c, sums, i, num_levels);
    if (kl <= best_kl && kl < kInf) {
      best_kl = kl;
      best_edge = i;
    }
  }
  return best_edge;
}

// The occupied bins as the kMse score reads them: centres x = b + 0.5 and counts, in double.
struct Occupied {
  std::vector<double> centre, count;
};

template <typename Count>
Occupied OccupiedBins(absl::Span<const Count> c) {
  Occupied occupied;
  for (int b = 0; b < static_cast<int>(c.size()); ++b) {
    if (c[b] == 0) continue;
    occupied.centre.push_back(b + 0.5);
    occupied.count.push_back(static_cast<double>(c[b]));
  }
  return occupied;
}

// The bins the squared-error scores weigh: the sample-balanced counts where the histogram has
// them, else the counts.
Occupied ScoredBins(const AbsHistogram& histogram) {
  if (!histogram.balanced_bins().empty()) return OccupiedBins(histogram.balanced_bins());
  return OccupiedBins(histogram.bins());
}

// The kMse score of threshold t (in units of the bin width) over the occupied bins: each bin's
// term count * (x - k * t / L)^2, k = min(round_half_even(x * L / t), L), added into four sums
// (occupied bin i into sum i % 4, in order) that are added as (s0 + s1) + (s2 + s3). The
// whole groups of four bins run with AVX2 (one register of four sums) where runtime/cpu_isa.h
// allows it, else with SSE4.1 (the build's x86-64-v2 baseline, two registers): the same lane
// operations in the same order, so every CPU and ISA cap gets the same bits.
void MseGroupsSse(const double* x, const double* count, size_t groups, double levels, double t, double* sums) {
  const __m128d vl = _mm_set1_pd(levels), vt = _mm_set1_pd(t);
  __m128d sum01 = _mm_loadu_pd(sums), sum23 = _mm_loadu_pd(sums + 2);
  const auto terms = [&](size_t i) {
    const __m128d vx = _mm_loadu_pd(x + i);
    const __m128d k =
        _mm_min_pd(_mm_round_pd(_mm_div_pd(_mm_mul_pd(vx, vl), vt), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vl);
    const __m128d d = _mm_sub_pd(vx, _mm_div_pd(_mm_mul_pd(k, vt), vl));
    return _mm_mul_pd(_mm_loadu_pd(count + i), _mm_mul_pd(d, d));
  };
  for (size_t i = 0; i < 4 * groups; i += 4) {
    sum01 = _mm_add_pd(sum01, terms(i));
    sum23 = _mm_add_pd(sum23, terms(i + 2));
  }
  _mm_storeu_pd(sums, sum01);
  _mm_storeu_pd(sums + 2, sum23);
}

__attribute__((target("avx2"))) void MseGroupsAvx2(const double* x, const double* count, size_t groups, double levels,
                                                   double t, double* sums) {
  const __m256d vl = _mm256_set1_pd(levels), vt = _mm256_set1_pd(t);
  __m256d sum = _mm256_loadu_pd(sums);
  for (size_t i = 0; i < 4 * groups; i += 4) {
    const __m256d vx = _mm256_loadu_pd(x + i);
    const __m256d k = _mm256_min_pd(
        _mm256_round_pd(_mm256_div_pd(_mm256_mul_pd(vx, vl), vt), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vl);
    const __m256d d = _mm256_sub_pd(vx, _mm256_div_pd(_mm256_mul_pd(k, vt), vl));
    sum = _mm256_add_pd(sum, _mm256_mul_pd(_mm256_loadu_pd(count + i), _mm256_mul_pd(d, d)));
  }
  _mm256_storeu_pd(sums, sum);
}

double ErrorAt(const Occupied& occupied, double levels, double t) {
  const size_t n = occupied.centre.size();
  const double* x = occupied.centre.data();
  const double* count = occupied.count.data();
  double sums[4] = {0, 0, 0, 0};
  // The cap in force at each call, as every kernel reads it (a test may lower it in-process).
  (runtime::IsaAllowed(runtime::Isa::kAvx2) ? MseGroupsAvx2 : MseGroupsSse)(x, count, n / 4, levels, t, sums);
  for (size_t i = n / 4 * 4; i < n; ++i) {
    const double k = std::min(std::nearbyint(x[i] * levels / t), levels);  // Half to even (default FE mode).
    const double d = x[i] - k * t / levels;
    sums[i % 4] += count[i] * (d * d);
  }
  return (sums[0] + sums[1]) + (sums[2] + sums[3]);
}

// The kMse search: the edge of the least score from num_levels up (`all`), and the least among
// the edges below `top` (max|x| in bin widths), which AtEdge does not clamp (`below_top`, 0 if
// none). Ties go to the larger edge.
//
// The edges are scored from the top down, and an edge is not scored where its clipping error
// alone, sum over the bins at or above it of count * (x - e_j)^2, exceeds the least score it
// could still change by a relative 1e-9 (below `top` the search then stops): that sum only grows as
// the edge goes down, and the score ErrorAt computes at an edge is at least the same clipped
// terms (each exact but for the product with its count: k = L gives k * t / L == t exactly)
// plus non-negative ones, so every edge below would score more, whatever the rounding of the
// two sums (about 4 * n * 2^-53: 2e-12 at 4096 bins, so the margin holds up to about 2 million
// bins). So the edges are those of the full search, bit for bit.
struct MseEdges {
  int all, below_top;
};
constexpr double kClipBoundMargin = 1e-9;
constexpr int kMaxBoundedBins = 1 << 20;
MseEdges SearchMse(const Occupied& occupied, int n, int num_levels, double top) {
  const double levels = num_levels - 1;  // L: quantized |x| takes k * T / L, k = 0..L.
  double best_error = kInf, best_below = kInf;
  MseEdges edges{n, 0};
  // Over the occupied bins with x >= j: count, sum of count * (x - j), and of count * (x - j)^2.
  double clipped_count = 0, clipped_first = 0, clipped_error = 0;
  int next = static_cast<int>(occupied.centre.size()) - 1;  // the highest bin not yet clipped
  const bool bounded = n <= kMaxBoundedBins;                // the margin covers the sums' rounding up to this
  for (int j = n; j >= num_levels; --j) {
    // From edge j + 1 to j: every clipped x - j grows by 1, and bin j (x - j = 0.5) joins.
    clipped_error += 2 * clipped_first + clipped_count;
    clipped_first += clipped_count;
    for (; next >= 0 && occupied.centre[next] >= j; --next) {
      const double c = occupied.count[next], d = occupied.centre[next] - j;
      clipped_error += c * d * d;
      clipped_first += c * d;
      clipped_count += c;
    }
    if (!bounded) {
      // Every edge is scored.
    } else if (j < top) {
      // Neither least can change here or below (best_below >= best_error).
      if (clipped_error > best_below * (1 + kClipBoundMargin)) break;
    } else if (clipped_error > best_error * (1 + kClipBoundMargin)) {
      if (num_levels >= top) break;  // no edge below top to search
      continue;                      // the edges below top still decide below_top
    }
    const double error = ErrorAt(occupied, levels, j);  // T = e_j, in units of the bin width.
    if (error < best_error) {
      best_error = error;
      edges.all = j;
    }
    if (j < top && error < best_below) {
      best_below = error;
      edges.below_top = j;
    }
  }
  return edges;
}

int MseEdge(const Occupied& occupied, int n, int num_levels) {
  return SearchMse(occupied, n, num_levels, 0).all;
}

}  // namespace

absl::StatusOr<CalibrationMethod> ParseCalibrationMethod(absl::string_view name) {
  for (const MethodName& m : kMethodNames) {
    if (m.name == name) return m.method;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown calibration method \"", name,
                                                 "\" (expected auto, entropy, percentile, mse, max or balanced_mse)"));
}

absl::string_view CalibrationMethodName(CalibrationMethod method) {
  for (const MethodName& m : kMethodNames) {
    if (m.method == method) return m.name;
  }
  return "unknown";
}

double QuantizationError(const AbsHistogram& histogram, double threshold, int num_quantized_bins) {
  const double w = histogram.bin_width();
  if (!(w > 0) || !(threshold > 0)) return kInf;
  return ErrorAt(OccupiedBins(histogram.bins()), num_quantized_bins - 1, threshold / w);
}

double BalancedQuantizationError(const AbsHistogram& histogram, double threshold, int num_quantized_bins) {
  const double w = histogram.bin_width();
  if (!(w > 0) || !(threshold > 0)) return kInf;
  return ErrorAt(ScoredBins(histogram), num_quantized_bins - 1, threshold / w);
}

namespace {

// The searches' last candidate edge: the top of the last occupied bin (at least num_levels).
// The histogram's range reaches up to twice max|x| (a power-of-two grid); edges above the data
// would be clamped to max|x| by AtEdge, so a search that picked one there (an empty stretch
// where the rounding grid happens to line up, or a KL with no clipped tail) would return max|x|
// with a score worse than it measured.
int SearchTop(absl::Span<const int64_t> c, int num_levels) { return std::max(MaxEdge(c), num_levels); }

ThresholdChoice ChooseSingle(const AbsHistogram& histogram, const ThresholdOptions& options, CalibrationMethod method) {
  const absl::Span<const int64_t> c = histogram.bins();
  const int top = SearchTop(c, options.num_quantized_bins);
  int edge = 0;
  switch (method) {
    case CalibrationMethod::kMax:
      edge = MaxEdge(c);
      break;
    case CalibrationMethod::kPercentile:
      edge = PercentileEdge(c, histogram.count(), options.percentile);
      break;
    case CalibrationMethod::kEntropy:
      edge = EntropyEdge(c.first(top), options.num_quantized_bins, options.entropy_skip_zero_spike);
      break;
    case CalibrationMethod::kMse:
      edge = MseEdge(OccupiedBins(c), top, options.num_quantized_bins);
      break;
    case CalibrationMethod::kBalancedMse:
      edge = MseEdge(ScoredBins(histogram), top, options.num_quantized_bins);
      break;
    case CalibrationMethod::kAuto:  // ChooseThreshold picks among the others
      break;
  }
  ThresholdChoice choice = AtEdge(histogram, edge);
  choice.method = method;
  return choice;
}

}  // namespace

absl::StatusOr<ThresholdChoice> ChooseThreshold(const AbsHistogram& histogram, const ThresholdOptions& options) {
  QFUSE_RETURN_IF_ERROR(Validate(histogram, options));
  if (histogram.max_abs() == 0) return ThresholdChoice{kZeroRangeThreshold, 0, options.method};
  if (options.method != CalibrationMethod::kAuto) return ChooseSingle(histogram, options, options.method);
  const Occupied occupied = ScoredBins(histogram);
  const bool balanced = !histogram.balanced_bins().empty();
  ThresholdChoice best;
  double best_error = kInf;
  // Entropy's and mse's thresholds are edges from M up (or max|x|), where the balanced_mse
  // search (mse's, without balanced counts) already minimises this score, so they can only tie
  // it or max: not searched.
  //
  // One more candidate: that search's least edge below max|x|. Its own least may lie at or above
  // max|x|, where AtEdge clamps it to max|x| and the score there can be worse than at an edge
  // below it (the top bin's values count at its centre); entropy's or mse's edge could then have
  // won, and this candidate is the least of all such edges.
  const CalibrationMethod searched = balanced ? CalibrationMethod::kBalancedMse : CalibrationMethod::kMse;
  const MseEdges edges = SearchMse(occupied, SearchTop(histogram.bins(), options.num_quantized_bins),
                                   options.num_quantized_bins,
                                   static_cast<double>(histogram.max_abs()) / histogram.bin_width());
  std::vector<ThresholdChoice> candidates;
  for (CalibrationMethod m : {CalibrationMethod::kPercentile, CalibrationMethod::kMax}) {
    candidates.push_back(ChooseSingle(histogram, options, m));
  }
  candidates.push_back(AtEdge(histogram, edges.all));
  candidates.back().method = searched;
  if (edges.below_top > 0) {
    candidates.push_back(AtEdge(histogram, edges.below_top));
    candidates.back().method = searched;
  }
  for (const ThresholdChoice& choice : candidates) {
    const double error = ErrorAt(occupied, options.num_quantized_bins - 1, choice.threshold / histogram.bin_width());
    if (best_error == kInf || error < best_error || (error == best_error && choice.threshold > best.threshold)) {
      best = choice;
      best_error = error;
    }
  }
  return best;
}

absl::StatusOr<float> ComputeThreshold(const AbsHistogram& histogram, const ThresholdOptions& options) {
  QFUSE_ASSIGN_OR_RETURN(const ThresholdChoice choice, ChooseThreshold(histogram, options));
  return choice.threshold;
}

}  // namespace qfuse::calib
