#include "calib/histogram.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <immintrin.h>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/cpu_isa.h"

namespace qfuse::calib {
namespace {

constexpr float kFloatMax = std::numeric_limits<float>::max();

bool IsFinite(float x) { return std::fabs(x) <= kFloatMax; }  // false for NaN and +-Inf

// Index of the bin `src` lands in when bins are merged 2^shift at a time.
int MergedIndex(int src, int shift) { return shift >= 31 ? 0 : src >> shift; }

// Merges bins [0, size) of `bins` 2^shift at a time, in place.
template <typename Count>
void MergeInPlace(Count* bins, int size, int shift) {
  for (int b = 0; b < size; ++b) {
    const Count v = bins[b];
    bins[b] = 0;
    bins[MergedIndex(b, shift)] += v;  // Index <= b: already re-binned.
  }
}

}  // namespace

AbsHistogram::AbsHistogram(int num_bins) : bins_(num_bins, 0) {}

absl::StatusOr<AbsHistogram> AbsHistogram::Create(int num_bins) {
  if (num_bins < 1)
    return absl::InvalidArgumentError(absl::StrCat("AbsHistogram: num_bins must be >= 1, got ", num_bins));
  return AbsHistogram(num_bins);
}

absl::StatusOr<AbsHistogram> AbsHistogram::FromBins(std::vector<int64_t> bins, float bin_width, float min, float max) {
  if (bins.empty()) return absl::InvalidArgumentError("AbsHistogram::FromBins: no bins");
  // A subnormal width would make 1 / width infinite, and every bin index with it.
  if (!IsFinite(bin_width) || (bin_width != 0 && !(bin_width >= std::numeric_limits<float>::min()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("AbsHistogram::FromBins: bin width must be 0 or a finite normal float > 0, got ", bin_width));
  }
  int64_t count = 0;
  for (size_t b = 0; b < bins.size(); ++b) {
    if (bins[b] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("AbsHistogram::FromBins: bin ", b, " has negative count ", bins[b]));
    }
    if (bin_width == 0 && b > 0 && bins[b] > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("AbsHistogram::FromBins: bin ", b, " is non-empty but the bin width is unset (0)"));
    }
    count += bins[b];
  }
  AbsHistogram h(static_cast<int>(bins.size()));
  h.bins_ = std::move(bins);
  h.bin_width_ = bin_width;
  h.count_ = count;
  if (count == 0) return h;
  if (!IsFinite(min) || !IsFinite(max) || min > max) {
    return absl::InvalidArgumentError(absl::StrCat("AbsHistogram::FromBins: bad min/max ", min, " / ", max));
  }
  const float max_abs = std::max(-min, max);
  // Strictly below the range, as Add keeps it: a value at the top edge would sit in the last bin
  // here but in the bin above it once a later Add grew the width.
  if (bin_width == 0 ? max_abs != 0 : static_cast<double>(max_abs) >= h.range()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AbsHistogram::FromBins: max |x| ", max_abs, " is not below the histogram range ", h.range()));
  }
  h.min_ = min;
  h.max_ = max;
  return h;
}

AbsHistogram AbsHistogram::EmptyLike() const {
  AbsHistogram h(num_bins());
  h.bin_width_ = bin_width_;
  return h;
}

float AbsHistogram::max_abs() const { return count_ == 0 ? 0.0f : std::max(-min_, max_); }

namespace {

// The extremes of the finite values of `values` (ignoring the sign of zero) and their count, eight
// lanes per AVX2 instruction; lo / hi are FLT_MAX / lowest when none is finite.
__attribute__((target("avx2"))) void ScanAvx2(const float* x, size_t n, float* lo, float* hi, int64_t* finite) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 highest = _mm256_set1_ps(kFloatMax), lowest = _mm256_set1_ps(-kFloatMax);
  __m256 vlo = highest, vhi = lowest;
  __m256i count = _mm256_setzero_si256();  // minus the finite lanes (a true compare is -1)
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 ok = _mm256_cmp_ps(_mm256_and_ps(v, abs_mask), highest, _CMP_LE_OQ);  // false for NaN
    count = _mm256_sub_epi32(count, _mm256_castps_si256(ok));
    vlo = _mm256_min_ps(vlo, _mm256_blendv_ps(highest, v, ok));
    vhi = _mm256_max_ps(vhi, _mm256_blendv_ps(lowest, v, ok));
  }
  alignas(32) float lo_lanes[8], hi_lanes[8];
  alignas(32) int32_t lanes[8];
  _mm256_store_ps(lo_lanes, vlo);
  _mm256_store_ps(hi_lanes, vhi);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), count);
  for (int l = 0; l < 8; ++l) {
    *lo = std::min(*lo, lo_lanes[l]);
    *hi = std::max(*hi, hi_lanes[l]);
    *finite += lanes[l];
  }
  for (; i < n; ++i) {
    if (!IsFinite(x[i])) continue;
    *lo = std::min(*lo, x[i]);
    *hi = std::max(*hi, x[i]);
    ++*finite;
  }
}

}  // namespace

AbsHistogram::BatchScan AbsHistogram::Scan(absl::Span<const float> values) {
  BatchScan scan;
  // Each int32 lane counts one value in eight: below 2^31 up to 2^34 values.
  if (runtime::IsaAllowed(runtime::Isa::kAvx2) && values.size() < (size_t{1} << 34)) {
    scan.finite = 0;
    ScanAvx2(values.data(), values.size(), &scan.lo, &scan.hi, &scan.finite);
    scan.nonfinite = static_cast<int64_t>(values.size()) - scan.finite;
    // The scalar scan keeps the first of equal values; only zeros differ among equal values (in
    // sign), so an extreme of zero takes the sign of the first zero, as there.
    if (scan.lo == 0 || scan.hi == 0) {
      const float* zero = std::find(values.begin(), values.end(), 0.0f);  // -0.0f == 0.0f
      if (scan.lo == 0) scan.lo = *zero;
      if (scan.hi == 0) scan.hi = *zero;
    }
    return scan;
  }
  for (const float x : values) {
    if (IsFinite(x)) {
      scan.lo = std::min(scan.lo, x);
      scan.hi = std::max(scan.hi, x);
    } else {
      ++scan.nonfinite;
    }
  }
  scan.finite = static_cast<int64_t>(values.size()) - scan.nonfinite;
  return scan;
}

AbsHistogram::BatchScan AbsHistogram::Join(const BatchScan& first, const BatchScan& second) {
  // std::min / std::max keep the first of equal values, as one scan over both parts would.
  BatchScan scan;
  scan.lo = std::min(first.lo, second.lo);
  scan.hi = std::max(first.hi, second.hi);
  scan.nonfinite = first.nonfinite + second.nonfinite;
  scan.finite = first.finite + second.finite;
  return scan;
}

bool AbsHistogram::Apply(const BatchScan& scan) {
  nonfinite_count_ += scan.nonfinite;
  if (scan.finite == 0) return false;
  count_ += scan.finite;
  min_ = std::min(min_, scan.lo);
  max_ = std::max(max_, scan.hi);
  const float batch_max_abs = std::max(-scan.lo, scan.hi);
  if (batch_max_abs > 0) CoverRange(batch_max_abs);
  if (bin_width_ == 0) {  // Only zeros so far.
    bins_[0] += scan.finite;
    return false;
  }
  return true;
}

void AbsHistogram::BinInto(absl::Span<const float> values, bool all_finite, int64_t* bins) const {
  // |x| < range() here, and for widths this class set (powers of two) the product is exact and
  // below num_bins; with a FromBins width that is not one, the rounded product of a value just
  // below the range may reach num_bins: the last bin.
  const float inv_width = 1.0f / bin_width_;
  const int last = num_bins() - 1;
  if (all_finite) {
    for (const float x : values) {
      const int b = static_cast<int>(std::fabs(x) * inv_width);
      ++bins[b < last ? b : last];
    }
  } else {
    for (const float x : values) {
      if (!IsFinite(x)) continue;
      const int b = static_cast<int>(std::fabs(x) * inv_width);
      ++bins[b < last ? b : last];
    }
  }
}

void AbsHistogram::DropBalanced() {
  sampled_only_ = false;
  balanced_ = {};
  open_group_ = -1;
  open_rows_ = {};
  open_mean_square_ = {};
  open_top_ = {};
}

void AbsHistogram::Add(absl::Span<const float> values) {
  if (sampled_only_) DropBalanced();
  const BatchScan scan = Scan(values);
  if (Apply(scan)) BinInto(values, scan.nonfinite == 0, bins_.data());
}

AbsHistogram::BatchScan AbsHistogram::ScanInParts(absl::Span<const float> values, int parts,
                                                  const std::function<absl::Span<const float>(int)>& part,
                                                  const PartRunner& run) {
  if (parts <= 1) return Scan(values);
  std::vector<BatchScan> scans(parts);
  run(parts, [&](int k) { scans[k] = Scan(part(k)); });
  BatchScan scan = scans[0];
  for (int k = 1; k < parts; ++k) scan = Join(scan, scans[k]);
  return scan;
}

void AbsHistogram::AddInParts(absl::Span<const float> values, int parts, const PartRunner& run) {
  if (sampled_only_) DropBalanced();
  const int64_t n = static_cast<int64_t>(values.size());
  parts = static_cast<int>(std::min<int64_t>(parts, n / kMinPartValues));
  if (parts <= 1) {
    Add(values);
    return;
  }
  const int64_t step = (n + parts - 1) / parts;
  auto part = [&](int k) { return values.subspan(std::min(n, k * step), step); };
  const BatchScan scan = ScanInParts(values, parts, part, run);
  if (!Apply(scan)) return;
  // The parts' counts: scratch of the calling thread, reused from call to call, so a histogram
  // keeps only its own bins.
  thread_local std::vector<int64_t> part_bins;
  part_bins.assign(static_cast<size_t>(parts) * num_bins(), 0);
  int64_t* const counts = part_bins.data();  // this thread's: the parts may run on others
  run(parts, [&](int k) { BinInto(part(k), scan.nonfinite == 0, counts + k * num_bins()); });
  for (int k = 0; k < parts; ++k) {
    const int64_t* part_counts = counts + k * num_bins();
    for (int b = 0; b < num_bins(); ++b) bins_[b] += part_counts[b];
  }
}

void AbsHistogram::AddSamples(absl::Span<const float> values, int64_t num_samples, int64_t first_sample, int parts,
                              const PartRunner& run) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (num_samples < 1 || n % num_samples != 0) num_samples = 1;
  const int64_t per_sample = n / num_samples;
  if (per_sample > std::numeric_limits<int32_t>::max()) {  // beyond the int32 rows: counts only
    AddInParts(values, parts, run);
    return;
  }
  if (sampled_only_ && balanced_.empty()) balanced_.assign(bins_.size(), 0.0);
  // The range pass on value parts (any split gives the same scan); the binning on sample parts.
  const int scan_parts = static_cast<int>(std::min<int64_t>(parts, n / kMinPartValues));
  const int64_t scan_step = scan_parts > 1 ? (n + scan_parts - 1) / scan_parts : n;
  const BatchScan scan = ScanInParts(
      values, scan_parts, [&](int k) { return values.subspan(std::min(n, k * scan_step), scan_step); }, run);
  Apply(scan);  // zeros only (width unset) or nothing finite: the samples still take their places
  parts = static_cast<int>(std::min<int64_t>({parts, num_samples, n / kMinPartValues}));
  const int64_t step = parts > 1 ? (num_samples + parts - 1) / parts : num_samples;
  // Each sample's counts (int32), its mean square and its highest bin, in scratch of the calling
  // thread. Rows are left zero after use, so only the bins a sample reached are cleared.
  thread_local std::vector<int32_t> rows;
  thread_local std::vector<double> mean_square;
  thread_local std::vector<int> top;
  const size_t row_values = static_cast<size_t>(num_samples) * bins_.size();
  if (rows.size() < 2 * row_values) rows.resize(2 * row_values, 0);
  mean_square.assign(num_samples, 0.0);
  top.assign(num_samples, -1);
  // Pointers, not the thread_local names: inside the lambda (run on other threads) those would
  // name the running thread's own scratch.
  int32_t* const row_data = rows.data();
  double* const sample_mean_square = mean_square.data();
  int* const sample_top = top.data();
  const bool all_finite = scan.nonfinite == 0;
  const bool binned = bin_width_ > 0;  // else every finite value so far is zero (Apply counted them)
  const float inv_width = binned ? 1.0f / bin_width_ : 0.0f;
  const int last = num_bins() - 1;
  auto bin_sample = [&](int64_t s) {
    int32_t* const row = row_data + s * bins_.size();
    const float* const x = values.data() + s * per_sample;
    // Two partial sums of squares (one would chain every add on the last), in double so that no
    // square overflows; two rows of counts, so that a run of values in one bin does not chain
    // every increment on the last (the second row sits after the sample's rows, see below).
    int32_t* const odd_row = row_data + row_values + s * bins_.size();
    double even_squares = 0, odd_squares = 0;
    int64_t finite = 0;
    int high = -1;
    int64_t i = 0;
    if (all_finite && binned) {
      for (; i + 2 <= per_sample; i += 2) {
        const float a = x[i], b = x[i + 1];
        even_squares += static_cast<double>(a) * a;
        odd_squares += static_cast<double>(b) * b;
        const int ba = std::min(static_cast<int>(std::fabs(a) * inv_width), last);  // as BinInto
        const int bb = std::min(static_cast<int>(std::fabs(b) * inv_width), last);
        ++row[ba];
        ++odd_row[bb];
        high = std::max(high, std::max(ba, bb));
      }
      finite = i;
    }
    if (binned) {
      for (; i < per_sample; ++i) {
        if (!IsFinite(x[i])) continue;
        even_squares += static_cast<double>(x[i]) * x[i];
        const int b = std::min(static_cast<int>(std::fabs(x[i]) * inv_width), last);
        ++row[b];
        high = std::max(high, b);
        ++finite;
      }
    }
    for (int b = 0; b <= high; ++b) {
      row[b] += odd_row[b];
      odd_row[b] = 0;
    }
    sample_mean_square[s] = finite > 0 ? (even_squares + odd_squares) / static_cast<double>(finite) : 0.0;
    sample_top[s] = high;
  };
  auto bin_part = [&](int k) {
    for (int64_t s = k * step; s < std::min(num_samples, (k + 1) * step); ++s) bin_sample(s);
  };
  if (parts > 1) {
    run(parts, bin_part);
  } else {
    bin_part(0);
  }
  // Samples in order, whatever the parts: the same sums on any thread count. A group that lies
  // whole in this batch is weighed from the scratch rows; the others join the open group.
  int64_t s = 0;
  while (s < num_samples) {
    const int64_t group = (first_sample + s) / kBalanceGroup;
    const int64_t group_end = std::min(num_samples, (group + 1) * kBalanceGroup - first_sample);
    if (open_group_ != group) FinishSamples();
    const bool whole = (first_sample + s) % kBalanceGroup == 0 && group_end - s == kBalanceGroup;
    if (whole) {
      WeighGroup(row_data + s * bins_.size(), absl::MakeConstSpan(mean_square).subspan(s, kBalanceGroup),
                 absl::MakeConstSpan(top).subspan(s, kBalanceGroup), /*scratch=*/true);
    } else {
      open_group_ = group;
      for (int64_t k = s; k < group_end; ++k) {
        // Indices that come again (a tensor sample-major in some batches only) would grow the
        // open group past kBalanceGroup samples: weigh it as it is first.
        if (open_mean_square_.size() >= static_cast<size_t>(kBalanceGroup)) {
          FinishSamples();
          open_group_ = group;
        }
        int32_t* row = row_data + k * bins_.size();
        const size_t at = open_rows_.size();
        open_rows_.resize(at + bins_.size(), 0);
        for (int b = 0; b <= top[k]; ++b) {
          bins_[b] += row[b];  // the counts now, the balanced counts when the group is weighed
          open_rows_[at + b] = row[b];
          row[b] = 0;
        }
        open_mean_square_.push_back(mean_square[k]);
        open_top_.push_back(top[k]);
      }
      if ((first_sample + group_end) % kBalanceGroup == 0) FinishSamples();  // the group is complete
    }
    s = group_end;
  }
}

void AbsHistogram::WeighGroup(int32_t* rows, absl::Span<const double> mean_square, absl::Span<const int> top,
                              bool scratch) {
  const size_t stride = bins_.size();
  std::array<double, kBalanceGroup> sorted;  // a group holds at most kBalanceGroup samples
  std::copy(mean_square.begin(), mean_square.end(), sorted.begin());
  const auto end = sorted.begin() + mean_square.size();
  const auto median = sorted.begin() + (mean_square.size() - 1) / 2;
  std::nth_element(sorted.begin(), median, end);
  const double typical = *median;
  for (size_t s = 0; s < mean_square.size(); ++s) {
    int32_t* row = rows + s * stride;
    const double weight = mean_square[s] > 0 ? 1.0 / std::max(mean_square[s], typical) : 0.0;
    for (int b = 0; b <= top[s]; ++b) {
      if (row[b] == 0) continue;
      if (scratch) bins_[b] += row[b];  // open samples' counts were added as they came
      if (sampled_only_) balanced_[b] += weight * row[b];
      if (scratch) row[b] = 0;
    }
  }
}

void AbsHistogram::FinishSamples() {
  if (open_mean_square_.empty()) return;
  WeighGroup(open_rows_.data(), open_mean_square_, open_top_, /*scratch=*/false);
  open_group_ = -1;
  open_rows_ = {};
  open_mean_square_ = {};
  open_top_ = {};
}

void AbsHistogram::CoverRange(float max_abs) {
  if (bin_width_ == 0) {
    // The smallest power of two (at least FLT_MIN, itself 2^-126) whose num_bins multiple
    // exceeds max|x|: it depends on the batch's max only through the power of two it needs.
    const double n = num_bins();
    double width = std::numeric_limits<float>::min();
    while (width * n <= max_abs) width *= 2;
    bin_width_ = static_cast<float>(width);
    return;
  }
  if (static_cast<double>(max_abs) < range()) return;
  int exponent = 1;
  while (std::ldexp(range(), exponent) <= max_abs) ++exponent;
  Grow(exponent);
}

void AbsHistogram::Grow(int exponent) {
  MergeInPlace(bins_.data(), num_bins(), exponent);
  if (!balanced_.empty()) MergeInPlace(balanced_.data(), num_bins(), exponent);
  for (size_t s = 0; s < open_top_.size(); ++s) {
    MergeInPlace(open_rows_.data() + s * bins_.size(), open_top_[s] + 1, exponent);
    open_top_[s] = open_top_[s] < 0 ? -1 : MergedIndex(open_top_[s], exponent);
  }
  bin_width_ = std::ldexp(bin_width_, exponent);
}

absl::Status AbsHistogram::Merge(const AbsHistogram& other) {
  if (other.num_bins() != num_bins()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AbsHistogram::Merge: other has ", other.num_bins(), " bins, this one ", num_bins()));
  }
  if (!other.open_mean_square_.empty()) {
    return absl::FailedPreconditionError("AbsHistogram::Merge: other has samples not yet weighed (FinishSamples)");
  }
  if (other.bin_width_ != 0 && bin_width_ != 0) {
    int exponent = 0;
    if (std::frexp(static_cast<double>(other.bin_width_) / bin_width_, &exponent) != 0.5) {
      return absl::FailedPreconditionError(absl::StrCat("AbsHistogram::Merge: bin widths ", bin_width_, " and ",
                                                        other.bin_width_,
                                                        " are not a power of two apart, so bins cannot be merged "
                                                        "exactly (only a FromBins width can be)"));
    }
  }
  FinishSamples();
  // Balanced counts stay only where every value of both came through AddSamples.
  const bool other_sampled = other.sampled_only_ && !other.balanced_.empty();
  if (!other_sampled && other.count_ + other.nonfinite_count_ > 0) {
    if (sampled_only_) DropBalanced();
  } else if (sampled_only_ && other_sampled && balanced_.empty()) {
    balanced_.assign(bins_.size(), 0.0);
  }
  const bool merge_balanced = sampled_only_ && other_sampled;
  // Balanced counts of bin 0 of an unset width are zero (all-zero samples add nothing).
  if (other.bin_width_ == 0) {
    bins_[0] += other.bins_[0];
  } else if (bin_width_ == 0) {
    const int64_t zeros = bins_[0];
    bins_ = other.bins_;
    bins_[0] += zeros;
    if (merge_balanced) balanced_ = other.balanced_;
    bin_width_ = other.bin_width_;
  } else {
    // Both widths are floats, so the ratio is exact in double when it is a power of two.
    int exponent = 0;
    std::frexp(static_cast<double>(other.bin_width_) / bin_width_, &exponent);  // a power of two (checked)
    const int shift = exponent - 1;  // other width = this width * 2^shift
    if (shift > 0) Grow(shift);
    const int other_shift = shift < 0 ? -shift : 0;
    for (int b = 0; b < num_bins(); ++b) bins_[MergedIndex(b, other_shift)] += other.bins_[b];
    if (merge_balanced) {
      for (int b = 0; b < num_bins(); ++b) balanced_[MergedIndex(b, other_shift)] += other.balanced_[b];
    }
  }
  count_ += other.count_;
  nonfinite_count_ += other.nonfinite_count_;
  if (other.count_ > 0) {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  return absl::OkStatus();
}

}  // namespace qfuse::calib
