// A bundled sample model (models/<name>) fused at a level, calibrated on 64 Fashion-MNIST
// training images with entropy thresholds and converted to QDQ: the int8 model the
// runtime tests run. `reduce_range`: 7-bit weights (quant::ConvertOptions::reduce_range).
// QuantizeSampleWith takes any thresholds and conversion options, fusing with the unit forms of
// the options' target, and keeps the conversion statistics and the table.
#ifndef QFUSE_TESTS_TESTING_QUANTIZED_SAMPLE_H_
#define QFUSE_TESTS_TESTING_QUANTIZED_SAMPLE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "calib/calibration_table.h"
#include "calib/thresholds.h"
#include "fusion/pipeline.h"
#include "ir/model.h"
#include "quant/qdq_converter.h"

namespace qfuse::testing {

struct QuantizedSample {
  ir::Model model;
  quant::ConversionStats stats;
  calib::CalibrationTable table;
};

// The bundled sample `name` fused at `level` (with the unit forms of the options' target) and
// calibrated on its first `samples` Fashion-MNIST training images: the float model (not
// converted) and its table, in a QuantizedSample with empty stats.
absl::StatusOr<QuantizedSample> CalibrateSample(const std::string& name, fusion::FusionLevel level,
                                                const calib::ThresholdOptions& threshold,
                                                const quant::ConvertOptions& convert, int64_t samples = 64);

absl::StatusOr<QuantizedSample> QuantizeSampleWith(const std::string& name, fusion::FusionLevel level,
                                                   const calib::ThresholdOptions& threshold,
                                                   const quant::ConvertOptions& convert);

absl::StatusOr<ir::Model> QuantizeSample(const std::string& name, fusion::FusionLevel level,
                                         quant::ActivationType activations, bool reduce_range = false);

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_QUANTIZED_SAMPLE_H_
