#include "tests/testing/quantized_sample.h"

#include "calib/calibrator.h"
#include "ir/onnx_import.h"
#include "ir/status_macros.h"

namespace qfuse::testing {

absl::StatusOr<ir::Model> QuantizeSample(const std::string& name, fusion::FusionLevel level,
                                         quant::ActivationType activations, bool reduce_range) {
  QFUSE_ASSIGN_OR_RETURN(ir::Model model, ir::LoadModel("models/" + name + "/model.onnx"));
  QFUSE_RETURN_IF_ERROR(fusion::Fuse(&model, level).status());
  calib::DataSource source;
  source.path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  QFUSE_ASSIGN_OR_RETURN(auto data, calib::OpenDataset({source}, *model.graph, 64));
  calib::CalibrateOptions calibrate;
  calibrate.num_samples = 64;
  calibrate.show_progress = false;
  // Fixed thresholds (the integer path, not the calibration method, is under test).
  calibrate.threshold.method = calib::CalibrationMethod::kEntropy;
  QFUSE_ASSIGN_OR_RETURN(calib::CalibrationRun run, calib::Calibrate(*model.graph, *data, calibrate));
  quant::ConvertOptions convert;
  convert.activation_type = activations;
  convert.reduce_range = reduce_range;
  QFUSE_RETURN_IF_ERROR(quant::ConvertToQdq(&model, run.table, convert).status());
  return model;
}

}  // namespace qfuse::testing
