// Test helpers shared by the threshold-search tests: every method, and options for one.
#ifndef QFUSE_TESTS_CALIB_THRESHOLDS_TEST_UTIL_H_
#define QFUSE_TESTS_CALIB_THRESHOLDS_TEST_UTIL_H_

#include "calib/thresholds.h"

namespace qfuse::calib::thresholds_test {

inline constexpr CalibrationMethod kAllMethods[] = {CalibrationMethod::kEntropy, CalibrationMethod::kPercentile,
                                                    CalibrationMethod::kMse,     CalibrationMethod::kMax,
                                                    CalibrationMethod::kAuto,    CalibrationMethod::kBalancedMse};

// The default ThresholdOptions with `method` and `num_quantized_bins` levels.
inline ThresholdOptions Options(CalibrationMethod method, int num_quantized_bins = 128) {
  ThresholdOptions o;
  o.method = method;
  o.num_quantized_bins = num_quantized_bins;
  return o;
}

}  // namespace qfuse::calib::thresholds_test

#endif  // QFUSE_TESTS_CALIB_THRESHOLDS_TEST_UTIL_H_
