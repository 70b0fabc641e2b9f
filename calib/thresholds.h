// Saturation thresholds from an |x| histogram: TensorRT-style entropy (KL), percentile, MSE,
// sample-balanced MSE and max calibration. The threshold T maps to a scale T / 127 (int8 symmetric) or T / 255 (uint8).
#ifndef QFUSE_CALIB_THRESHOLDS_H_
#define QFUSE_CALIB_THRESHOLDS_H_

#include <limits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "calib/histogram.h"

namespace qfuse::calib {

enum class CalibrationMethod { kEntropy, kPercentile, kMse, kMax, kAuto, kBalancedMse };

// "entropy", "percentile", "mse", "max", "balanced_mse", "auto" (exact, lower case).
absl::StatusOr<CalibrationMethod> ParseCalibrationMethod(absl::string_view name);
absl::string_view CalibrationMethodName(CalibrationMethod method);

// Which tensors the converter stores on the unsigned grid (256 levels of [0, T]: uint8, zero
// point 0) rather than the symmetric one (levels -127..127 of [-T, T]). Their threshold
// search uses kUnsignedGridBins levels (CalibrateOptions::unsigned_grid); the others use
// ThresholdOptions::num_quantized_bins.
enum class UnsignedGrid {
  kNone,                       // every tensor symmetric (int8 activations, target tensorrt)
  kNonNegativeByConstruction,  // ir::NonNegativeValues of the graph
  kBoundedBelowByConstruction,  // every value with an ir::LowerBounds bound (target qfuse)
  kObservedNonNegative,        // observed min >= 0 on the calibration data (uint8 activations)
};

// Quantized levels of |x| on the unsigned grid (levels 0..255).
inline constexpr int kUnsignedGridBins = 256;

struct ThresholdOptions {
  CalibrationMethod method = CalibrationMethod::kAuto;
  // kPercentile: share of all |x| (in percent, in (0, 100]) that must lie at or below T.
  double percentile = 99.99;
  // Quantized levels of |x|, >= 2 and <= the histogram's bin count: 128 for int8 symmetric
  // (levels 0..127), 256 for uint8 on non-negative tensors (levels 0..255). Used by kEntropy
  // (number of merged groups) and kMse (L = num_quantized_bins - 1 steps of T / L).
  int num_quantized_bins = 128;
  // kEntropy: score with c[0] replaced by c[1], as pytorch-quantization always does, so that a
  // spike of exact zeros (half of a post-ReLU tensor) does not pull the threshold down; exact
  // zeros quantize exactly at any scale. On by default: with it off (TensorRT's published
  // algorithm) post-ReLU activations of the sample CNNs clip at a tenth of their range and
  // int8 accuracy collapses. On a max(N(0,1), 0) tensor with 256 levels it moves T from 1.80
  // to 4.63 (see the fixtures).
  bool entropy_skip_zero_spike = true;
};

// Returned when the histogram holds only zeros: any scale represents them exactly, and 1 gives
// the scale 1/127 (1/255), a normal float that keeps requantization multipliers tame (ONNX
// Runtime likewise uses scale 1 for an all-zero range).
inline constexpr float kZeroRangeThreshold = 1.0f;
// Lower bound of every returned threshold, so T / 255 is still a normal float (scale never 0
// or subnormal, 1 / scale finite). Only ranges below ~3e-36 ever hit it.
inline constexpr float kMinThreshold = 256 * std::numeric_limits<float>::min();

struct ThresholdChoice {
  float threshold = 0;  // T: finite, >= kMinThreshold
  // Bin edge the method chose: T = min(edge * bin_width, max|x|) (computed in double, rounded
  // to float; clamping to max|x| never clips a value). 0 for an all-zero histogram.
  int edge = 0;
  // The method whose threshold this is: options.method, or for kAuto the one it picked.
  CalibrationMethod method = CalibrationMethod::kMax;
};

// All methods work on the histogram of n bins of width w with counts c[0..n-1], N = sum c and
// A = max|x|; candidate thresholds are bin edges e_j = j * w. Ties between candidates (exactly
// equal scores) go to the larger edge (less clipping).
//
// kMax:        T = A (edge = last non-empty bin + 1).
// kPercentile: smallest j >= 1 with c[0] + ... + c[j-1] >= (percentile / 100) * N (in double),
//              i.e. the edge where the cumulative count first reaches the percentile; at least
//              that share of the values is <= T. pytorch-quantization and ONNX Runtime return
//              the lower edge of that bin (e_{j-1}), one bin lower.
// kEntropy:    TensorRT's EntropyCalibration2 (Migacz, "8-bit Inference with TensorRT", GTC
//              2017). For every candidate i = M..top, M = num_quantized_bins, top = max(M, the
//              last non-empty bin + 1) (i = top: no clipping; edges above it would clip nothing
//              either, and AtEdge clamps them to A):
//                P = c[0..i-1] with the clipped tail c[i] + ... + c[n-1] added to P[i-1];
//                bins j < i are split into M groups g(j) = floor(j * M / i) (sizes differ by at
//                most one); Q[j] = (sum of c over j's group) / (non-empty bins in the group) if
//                c[j] > 0, else 0 (Q is built from the unclipped c, as in TensorRT);
//                KL(P || Q) = sum over P[j] > 0 of p_j * ln(p_j / q_j), p = P / N and
//                q = Q / (c[0] + ... + c[i-1]), in double.
//              No smoothing: terms with P == 0 add 0, and Q == 0 where P > 0 makes KL = +inf,
//              which rejects the candidate. That only happens when bin i-1 is empty while the
//              tail is not (or nothing lies below e_i); i = top is always finite, so a minimum
//              exists. T = e_i of the minimising i: the right edge of the last kept bin.
//              Differences from the references:
//              - TensorRT's slides loop i = 128..2047 (no i = 2048) and return (m + 0.5) * w,
//                half a bin beyond the kept range; we include i = top and use e_i.
//              - pytorch-quantization (_compute_amax_entropy) also returns e_i and breaks ties
//                towards larger i, but sets c[0] = c[1] first (hides the post-ReLU zero spike;
//                we keep c[0] unless entropy_skip_zero_spike), groups with a float
//                linspace/digitize (same groups as ours except where j * M / i is within
//                rounding of an integer), and also scores rejected candidates as +inf (scipy).
//              - ONNX Runtime (get_entropy_threshold) works on a signed histogram (symmetric
//                windows around zero, 128 bins by default), gives the M-th group the
//                remainder bins (floor(i / M) per group), marks empty bins on the clipped P,
//                truncates Q to integers, and smooths both P and Q (zeros get 1e-4, taken off
//                the non-zero bins) instead of rejecting; it breaks ties to the smaller i.
// kAuto:       the threshold of entropy, percentile, mse, max and balanced_mse with the smallest
//              expected squared quantization error (BalancedQuantizationError below: on the
//              sample-balanced counts where the histogram has them, else on the counts, and
//              then balanced_mse is left out as it would repeat mse): TensorRT's entropy where it
//              is good, and never a threshold that clips a large share of the values, such as
//              entropy's answer on a tensor with a big non-zero spike (a normalised image
//              background), nor one that a few outsized calibration samples stretch for the
//              rest. Ties go to the larger threshold. balanced_mse (mse without balanced counts)
//              minimises the same score over every edge from M up, where entropy's and mse's
//              thresholds lie (or at max|x|, which max is), so auto searches percentile, max,
//              balanced_mse (mse) and that search's least edge below max|x| (its own least may
//              lie above max|x| and be clamped to it, where the score can be worse): the others
//              could only tie, up to the float rounding of a threshold. Ties between these go to
//              the earlier in that order. The calibration table records the pick.
// kMse:        for every candidate j = M..top (as entropy's), T_j = e_j, L = M - 1: each bin's count sits at its
//              centre x_b = (b + 0.5) * w and quantizes to k * T_j / L with
//              k = min(round_half_even(x_b * L / T_j), L) (ONNX QuantizeLinear rounding, then
//              clipping); score = sum_b c[b] * (x_b - q_b)^2 (four interleaved partial sums,
//              every CPU the same bits), evaluated in units of w in
//              double. T = e_j of the minimum. (pytorch-quantization's _compute_amax_mse uses
//              bin centres as candidates, from bin 128 up to but excluding the last.)
// kBalancedMse: kMse's search with each bin's count replaced by its sample-balanced count
//              (histogram.h: every calibration sample's squared error relative to
//              max(its mean square, its group's median one)); kMse where the histogram has none.
//
// Errors: FailedPrecondition if the histogram is empty (no finite value added); InvalidArgument
// for num_quantized_bins outside [2, num_bins] or percentile outside (0, 100]. A histogram
// holding only zeros gives kZeroRangeThreshold with edge 0, for every method. A single spike
// (all mass in one bin b) gives T = A for every method: percentile stops at e_{b+1}; entropy
// scores 0 for every i > b and +inf below; MSE scores e_{b+1} (when >= e_M) at 1/4 w^2, which
// only e_b (clipping) ties, and the ties go to the larger edge. The searches end at e_{b+1},
// the last occupied bin's top (clamped to A, as every edge above max|x| would be).
absl::StatusOr<ThresholdChoice> ChooseThreshold(const AbsHistogram& histogram, const ThresholdOptions& options);

// Expected squared error, in units of the bin width squared, of quantizing the histogram's
// values with threshold T (any positive float, in the histogram's units) to
// options.num_quantized_bins - 1 steps: the kMse score at T (bin centres, half-to-even rounding,
// clipping at T).
double QuantizationError(const AbsHistogram& histogram, double threshold, int num_quantized_bins);

// The same score on the sample-balanced counts where the histogram has them (else
// QuantizationError): the score kBalancedMse minimises and kAuto compares.
double BalancedQuantizationError(const AbsHistogram& histogram, double threshold, int num_quantized_bins);

// ChooseThreshold(...).threshold.
absl::StatusOr<float> ComputeThreshold(const AbsHistogram& histogram, const ThresholdOptions& options);

}  // namespace qfuse::calib

#endif  // QFUSE_CALIB_THRESHOLDS_H_
