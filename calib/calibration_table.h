// The calibration table: per quantized tensor, its saturation threshold, int8 scale and
// observed range. Written and read as TensorRT's calibration cache text and as JSON
// (with method, sample count and the fingerprint of the calibrated graph).
#ifndef QFUSE_CALIB_CALIBRATION_TABLE_H_
#define QFUSE_CALIB_CALIBRATION_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace qfuse::calib {

struct TensorRange {
  std::string name;
  float threshold = 0;  // |x| above it saturates
  float scale = 0;      // int8 symmetric scale, threshold / 127, as TensorRT stores it
  float min = 0;        // observed (NaN when unknown, e.g. read from a TensorRT cache)
  float max = 0;
  std::string method;   // the method that chose the threshold ("" when unknown, e.g. a TensorRT cache)
  // The saturating reader (ir/reader_saturation.h) whose bound lowered the method's threshold
  // to its own, e.g. "Sigmoid"; "" when the method's threshold stands.
  std::string bounded_by;
};

struct CalibrationTable {
  std::string method;       // "auto", "entropy", "percentile", "mse", "max" or "balanced_mse"
  double percentile = 0;    // for "percentile"
  int64_t samples = 0;
  std::string fingerprint;  // of the calibrated graph ("" when unknown)
  std::vector<TensorRange> tensors;  // sorted by name

  const TensorRange* Find(const std::string& name) const;
};

// TensorRT's cache text: a header "TRT-8601-<Algorithm>" (EntropyCalibration2 for
// entropy, MinMaxCalibration for max, LegacyCalibration for percentile and mse), then
// one "name: <8 hex digits of the float32 scale's bits>" line per tensor.
std::string ToTensorRtCache(const CalibrationTable& table);
// Thresholds are rebuilt as scale * 127; min/max are unknown (NaN).
absl::StatusOr<CalibrationTable> ParseTensorRtCache(const std::string& text, const std::string& what);

std::string ToJson(const CalibrationTable& table);
absl::StatusOr<CalibrationTable> ParseJson(const std::string& text, const std::string& what);

// By extension: ".json" is JSON, anything else TensorRT cache text. Atomic write.
absl::Status WriteCalibrationTable(const CalibrationTable& table, const std::string& path);

// Reads a table for a graph with fingerprint `expected_fingerprint`. A JSON table made
// for another graph is refused unless `force`; a TensorRT cache has no fingerprint.
absl::StatusOr<CalibrationTable> ReadCalibrationTable(const std::string& path, const std::string& expected_fingerprint,
                                                      bool force);

}  // namespace qfuse::calib

#endif  // QFUSE_CALIB_CALIBRATION_TABLE_H_
