#include "tests/testing/quantized_sample.h"

#include "base/status_macros.h"
#include "calib/calibrator.h"
#include "ir/onnx_import.h"
#include "quant/deploy_target.h"

namespace qfuse::testing {

absl::StatusOr<QuantizedSample> CalibrateSample(const std::string& name, fusion::FusionLevel level,
                                                const calib::ThresholdOptions& threshold,
                                                const quant::ConvertOptions& convert, int64_t samples) {
  QuantizedSample q;
  QFUSE_ASSIGN_OR_RETURN(q.model, ir::LoadModel("models/" + name + "/model.onnx"));
  fusion::PipelineOptions fusion_options;
  fusion_options.unit_forms = quant::UnitFormsFor(convert.target);
  QFUSE_RETURN_IF_ERROR(fusion::Fuse(&q.model, level, fusion_options).status());
  data::DataSource source;
  source.path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  QFUSE_ASSIGN_OR_RETURN(auto data, data::OpenDataset({source}, *q.model.graph, samples));
  calib::CalibrateOptions calibrate;
  calibrate.num_samples = samples;
  calibrate.show_progress = false;
  calibrate.threshold = threshold;
  calibrate.unsigned_grid = quant::UnsignedGridOf(convert);
  QFUSE_ASSIGN_OR_RETURN(calib::CalibrationRun run, calib::Calibrate(*q.model.graph, *data, calibrate));
  q.table = run.table;
  return q;
}

absl::StatusOr<QuantizedSample> QuantizeSampleWith(const std::string& name, fusion::FusionLevel level,
                                                   const calib::ThresholdOptions& threshold,
                                                   const quant::ConvertOptions& convert) {
  QFUSE_ASSIGN_OR_RETURN(QuantizedSample q, CalibrateSample(name, level, threshold, convert));
  QFUSE_ASSIGN_OR_RETURN(q.stats, quant::ConvertToQdq(&q.model, q.table, convert));
  return q;
}

absl::StatusOr<ir::Model> QuantizeSample(const std::string& name, fusion::FusionLevel level,
                                         quant::ActivationType activations, bool reduce_range) {
  // Fixed thresholds (the integer path, not the calibration method, is under test).
  calib::ThresholdOptions threshold;
  threshold.method = calib::CalibrationMethod::kEntropy;
  quant::ConvertOptions convert;
  convert.activation_type = activations;
  convert.reduce_range = reduce_range;
  QFUSE_ASSIGN_OR_RETURN(QuantizedSample q, QuantizeSampleWith(name, level, threshold, convert));
  return std::move(q.model);
}

}  // namespace qfuse::testing
