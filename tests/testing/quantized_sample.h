// A bundled sample model (models/<name>) fused at a level, calibrated on 64 Fashion-MNIST
// training images with entropy thresholds and converted to QDQ: the int8 model the
// runtime tests run. `reduce_range`: 7-bit weights (quant::ConvertOptions::reduce_range).
#ifndef QFUSE_TESTS_TESTING_QUANTIZED_SAMPLE_H_
#define QFUSE_TESTS_TESTING_QUANTIZED_SAMPLE_H_

#include <string>

#include "absl/status/statusor.h"
#include "fusion/pipeline.h"
#include "ir/model.h"
#include "quant/qdq_converter.h"

namespace qfuse::testing {

absl::StatusOr<ir::Model> QuantizeSample(const std::string& name, fusion::FusionLevel level,
                                         quant::ActivationType activations, bool reduce_range = false);

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_QUANTIZED_SAMPLE_H_
