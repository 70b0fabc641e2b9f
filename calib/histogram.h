// Streaming histogram of |x| over a tensor's calibration activations (4096 equal-width bins
// on [0, range) by default), plus the signed min/max, the value count and the non-finite count.
#ifndef QFUSE_CALIB_HISTOGRAM_H_
#define QFUSE_CALIB_HISTOGRAM_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace qfuse::calib {

// Binning. Bin b holds the finite values with b * w <= |x| < (b + 1) * w, where w is the bin
// width; the index is computed as floor(|x| * (1.0f / w)) in float, which is exact when w is a
// power of two (as every width this class sets is), and anything at or past the top (possible
// only with a width given to FromBins) goes to the last bin. NaN and +-Inf are counted in
// nonfinite_count() and never binned; reporting them is the caller's job.
//
// Range. The width is unset (0) until the first batch holding a non-zero finite value; until
// then every (zero) value goes to bin 0, which is bin 0 for any later width. That batch sets w
// to the smallest power of two (at least FLT_MIN) with w * num_bins > max|x| of the batch. A
// later batch whose max|x| reaches the range grows the width to the smallest power of two that
// covers it the same way: new bin j is the exact sum of old bins [j*k, (j+1)*k), k the ratio of
// the widths (all old bins fall in bin 0 when k >= num_bins). Since both widths are powers of
// two, floor(|x| / w) merged k at a time equals floor(|x| / (k * w)) in float, and no value sat
// at the old top edge, so the bins are exactly what binning every value at the final width
// would give: the final histogram depends on the values only, not on how they were split into
// batches or on which batch came first (the width is the smallest power of two covering the
// max|x| of all values). No interpolation, so counts stay integers. The price: the max lies in
// the upper half of the range, so between num_bins / 2 and num_bins bins resolve the data
// (hence 4096 bins: at least TensorRT's 2048 on the data). The sample-balanced counts below are
// re-binned the same way, but they are sums of doubles, which another batching may add in
// another order (a group weighed at a finer width is merged after), so across batchings they
// agree to the rounding of those sums rather than bit for bit.
//
// Sample-balanced counts (optional, beside the counts, on the same bins and re-binned with them):
// AddSamples adds each finite value of calibration sample s with the weight 1 / max(E_s, E_med),
// E_s the mean of x^2 over the sample's finite values and E_med the lower median of the E_s of
// its group: samples 32k .. 32k + 31 by their index in the calibration set, whatever the batches
// they came in (so the weights do not depend on the batch size, and a batch of one sample is
// weighed against its group too). A sample whose values are all zero adds nothing. So a sample
// weighs at most what a typical sample of its group weighs, relative to its own size: a few
// samples whose activations run 100x the others' (a trained EfficientNet's calibration set,
// docs/zoo.md) cannot decide a squared-error threshold for the rest, as they do on the counts.
// The balanced counts exist only while every value came through AddSamples (Add, AddInParts or
// merging a histogram without them drops them), and are complete once FinishSamples has weighed
// the last, open group.
//
// Memory is num_bins counters (and num_bins doubles with the balanced counts) plus a few
// scalars; an open group (samples that arrived in batches not holding their whole group) keeps
// one int32 row of num_bins per sample until the group completes.
class AbsHistogram {
 public:
  static constexpr int kDefaultNumBins = 4096;

  // Empty histogram with kDefaultNumBins bins and an unset width.
  AbsHistogram() : AbsHistogram(kDefaultNumBins) {}

  // Empty histogram with `num_bins` (>= 1) bins and an unset width.
  static absl::StatusOr<AbsHistogram> Create(int num_bins);

  // Rebuilds a histogram from stored bins (e.g. a fixture or a cache): counts >= 0, bin_width
  // 0 (unset: then only bins[0] may be non-zero and min == max == 0) or a finite normal float,
  // min <= max finite when any count is non-zero, max(-min, max) < bin_width * bins.size().
  static absl::StatusOr<AbsHistogram> FromBins(std::vector<int64_t> bins, float bin_width, float min, float max);

  // An empty histogram on this one's grid (same bin count and width).
  AbsHistogram EmptyLike() const;

  // Adds one batch: two passes over `values` (range and non-finite count, then binning), no
  // allocation.
  void Add(absl::Span<const float> values);

  // Add with each pass split over `parts` contiguous parts of `values`, which run(parts, fn)
  // calls fn(0) .. fn(parts - 1) on, possibly at once (e.g. on a thread pool); the parts' bins
  // are counted apart and summed. The same histogram as Add, bit for bit: the parts' extremes
  // are joined in order and every value gets the bin Add gives it. Batches below
  // 2 * kMinPartValues values take Add.
  using PartRunner = std::function<void(int parts, const std::function<void(int part)>& fn)>;
  static constexpr int64_t kMinPartValues = 1 << 15;
  void AddInParts(absl::Span<const float> values, int parts, const PartRunner& run);

  // AddInParts plus the sample-balanced counts: `values` split into `num_samples` equal contiguous
  // samples (taken as 1 sample when num_samples does not divide values.size(): values that are
  // not sample-major), the first of them sample `first_sample` of the calibration set; calls
  // come in sample order. The counts, range and extremes are Add's, bit for bit. Each part of
  // run() takes whole samples; the samples' counts are weighed in sample order, so the balanced
  // counts do not depend on `parts` either. A sample of 2^31 values or more is added as by
  // AddInParts (which drops the balanced counts).
  void AddSamples(absl::Span<const float> values, int64_t num_samples, int64_t first_sample, int parts,
                  const PartRunner& run);
  // Weighs the open group (the samples of a group not yet complete): call it after the last
  // AddSamples, before reading balanced_bins().
  void FinishSamples();
  static constexpr int64_t kBalanceGroup = 32;

  // Adds `other`'s values as if they had been Added here. Exact: the finer histogram's bins are
  // merged 2^e at a time onto the coarser width, growing this one if `other` is coarser.
  // InvalidArgument if the bin counts differ; FailedPrecondition if both widths are set and
  // their ratio is not a power of two (only where FromBins gave a width that is not one) or if
  // `other` has an open group; either error leaves this histogram as it was. This one's open
  // group is weighed first; the result keeps balanced counts only if both had them (or one was
  // empty).
  absl::Status Merge(const AbsHistogram& other);

  int num_bins() const { return static_cast<int>(bins_.size()); }
  absl::Span<const int64_t> bins() const { return bins_; }
  // The sample-balanced counts; empty unless every value came through AddSamples and no group
  // is open.
  absl::Span<const double> balanced_bins() const {
    return sampled_only_ && open_mean_square_.empty() ? absl::Span<const double>(balanced_)
                                                      : absl::Span<const double>();
  }
  // 0 while unset (only zeros, or nothing, added so far).
  float bin_width() const { return bin_width_; }
  // bin_width() * num_bins(), in double: the upper end of the last bin.
  double range() const { return static_cast<double>(bin_width_) * bins_.size(); }
  // Number of finite values binned (the sum of bins()).
  int64_t count() const { return count_; }
  int64_t nonfinite_count() const { return nonfinite_count_; }
  bool empty() const { return count_ == 0; }
  // Signed extremes and max |x| over the finite values; 0 when empty().
  float min() const { return count_ == 0 ? 0.0f : min_; }
  float max() const { return count_ == 0 ? 0.0f : max_; }
  float max_abs() const;

 private:
  explicit AbsHistogram(int num_bins);

  // Add's first pass over a part of a batch: the signed extremes of its finite values (the
  // first of equal values kept) and its finite / non-finite counts.
  struct BatchScan {
    float lo = std::numeric_limits<float>::max();
    float hi = std::numeric_limits<float>::lowest();
    int64_t finite = 0, nonfinite = 0;
  };
  static BatchScan Scan(absl::Span<const float> values);
  // The scan of `first` followed by `second`.
  static BatchScan Join(const BatchScan& first, const BatchScan& second);
  // Scan of `values` (parts <= 1) or of its parts part(0) .. part(parts - 1), run by `run`
  // and joined in order.
  static BatchScan ScanInParts(absl::Span<const float> values, int parts,
                               const std::function<absl::Span<const float>(int)>& part, const PartRunner& run);
  // Counts the batch and covers its range; false when nothing is left to bin (no finite
  // value, or only zeros so far: bin 0 counted here).
  bool Apply(const BatchScan& scan);
  // Add's second pass: each finite value's bin at the current width, counted into `bins`.
  void BinInto(absl::Span<const float> values, bool all_finite, int64_t* bins) const;
  // Sets the width from the first non-zero max|x|, or grows the range to cover `max_abs`.
  void CoverRange(float max_abs);
  // Multiplies the width by 2^exponent (exponent >= 1), merging bins (and balanced counts)
  // 2^exponent at a time.
  void Grow(int exponent);

  // Adds a group's rows (one per sample, num_bins apart, up to top[s]) into the balanced counts,
  // with the group's median floor; `scratch` rows (a whole group in one batch) are also added
  // to the counts and left zero.
  void WeighGroup(int32_t* rows, absl::Span<const double> mean_square, absl::Span<const int> top, bool scratch);
  // Values came without sample weights: no balanced counts from now on.
  void DropBalanced();

  std::vector<int64_t> bins_;
  std::vector<double> balanced_;
  bool sampled_only_ = true;  // every value so far came through AddSamples
  // The open group: its index, and per sample its counts (a row of num_bins), mean square and
  // highest bin.
  int64_t open_group_ = -1;
  std::vector<int32_t> open_rows_;
  std::vector<double> open_mean_square_;
  std::vector<int> open_top_;
  float bin_width_ = 0.0f;
  int64_t count_ = 0;
  int64_t nonfinite_count_ = 0;
  float min_ = std::numeric_limits<float>::max();
  float max_ = std::numeric_limits<float>::lowest();
};

}  // namespace qfuse::calib

#endif  // QFUSE_CALIB_HISTOGRAM_H_
