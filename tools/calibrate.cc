// qfuse calibrate: fuses a model at a level, calibrates it on sample data and writes the
// calibration table (JSON, or TensorRT cache text for any other extension). Prints the
// time, samples/s and memory, so it doubles as the calibration benchmark.
//   bazel run //tools:calibrate -- --model=models/resnet_small/model.onnx --output=/tmp/calib.json
// Data flags as //tools:quantize's (tools/data_flags.h); --data, --samples and --batch are the
// old names of --calib_data, --calib_samples and --batch_size.
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "calib/calibrator.h"
#include "fusion/pipeline.h"
#include "ir/onnx_import.h"
#include "quant/deploy_target.h"
#include "quant/qdq_converter.h"
#include "tools/data_flags.h"
#include "tools/flag_util.h"
#include "tools/tool_main.h"
#include "tools/workspace_path.h"

ABSL_FLAG(std::string, model, "models/resnet_small/model.onnx", "float ONNX model");
ABSL_FLAG(std::vector<std::string>, calib_data, {},
          "calibration data: path, or input_name:path per model input (IDX, .npy, .pb folder, image folder, raw); "
          "required except for the bundled samples (Fashion-MNIST training images)");
ABSL_FLAG(std::vector<std::string>, data, {}, "alias of --calib_data (its old name here)");
ABSL_FLAG(int64_t, calib_samples, 512, "calibration samples, from the start of --calib_data");
ABSL_FLAG(int64_t, samples, 512, "alias of --calib_samples (its old name here)");
ABSL_FLAG(int64_t, batch_size, 0,
          "samples per runtime batch; 0: as many as fit 8 MiB of input, at most 32 (a fixed batch dim wins)");
ABSL_FLAG(int64_t, batch, 0, "alias of --batch_size (its old name here)");
ABSL_FLAG(std::string, method, "auto", "auto, entropy, percentile, mse, max or balanced_mse");
ABSL_FLAG(double, percentile, 99.99, "for --method=percentile");
ABSL_FLAG(double, activation_headroom, 1.0, "every activation threshold, once chosen, times this factor (> 0)");
ABSL_FLAG(bool, bound_by_readers, true,
          "lower a threshold to the bound of the saturating ops that read the value (ir/reader_saturation.h)");
ABSL_FLAG(std::string, fusion, "full", "fusion level the table is made for: full, bn or none");
ABSL_FLAG(int, threads, 2, "runtime threads");
ABSL_FLAG(std::string, target, "qfuse",
          "deploy target the table is for (qfuse, onnxruntime, tensorrt): its unit forms and its activation grid "
          "(which tensors search their threshold over 256 unsigned levels) with the target's default options");
ABSL_FLAG(std::string, output, "", "table to write (.json: JSON, else TensorRT cache); empty: none");

namespace qfuse::tools {
namespace {

absl::Status Main() {
  const std::string path = ResolveUserPath(absl::GetFlag(FLAGS_model));
  QFUSE_ASSIGN_OR_RETURN(ir::Model model, ir::LoadModel(path));
  QFUSE_ASSIGN_OR_RETURN(fusion::FusionLevel level, fusion::ParseFusionLevel(absl::GetFlag(FLAGS_fusion)));
  QFUSE_ASSIGN_OR_RETURN(quant::DeployTarget target, quant::ParseDeployTarget(absl::GetFlag(FLAGS_target)));
  quant::ConvertOptions convert;
  convert.target = target;
  convert = quant::WithTargetDefaults(convert, quant::UserChoices());
  fusion::PipelineOptions fusion_options;
  fusion_options.unit_forms = quant::UnitFormsFor(target);
  QFUSE_RETURN_IF_ERROR(fusion::Fuse(&model, level, fusion_options).status());
  QFUSE_ASSIGN_OR_RETURN(const std::vector<std::string> values, GetFlagOrAlias(FLAGS_calib_data, FLAGS_data));
  QFUSE_ASSIGN_OR_RETURN(const int64_t samples, GetFlagOrAlias(FLAGS_calib_samples, FLAGS_samples));
  if (samples <= 0) return absl::InvalidArgumentError("--calib_samples must be positive");
  QFUSE_ASSIGN_OR_RETURN(data::DataSource defaults, ReaderDefaultsFromFlags());
  QFUSE_ASSIGN_OR_RETURN(auto sources, CalibrationSources(path, values, defaults));
  QFUSE_ASSIGN_OR_RETURN(auto data, data::OpenDataset(sources, *model.graph, samples));
  calib::CalibrateOptions options;
  QFUSE_ASSIGN_OR_RETURN(options.threshold.method, calib::ParseCalibrationMethod(absl::GetFlag(FLAGS_method)));
  options.threshold.percentile = absl::GetFlag(FLAGS_percentile);
  options.activation_headroom = absl::GetFlag(FLAGS_activation_headroom);
  options.bound_by_readers = absl::GetFlag(FLAGS_bound_by_readers);
  options.unsigned_grid = quant::UnsignedGridOf(convert);
  options.num_samples = samples;
  QFUSE_ASSIGN_OR_RETURN(options.batch_size, GetFlagOrAlias(FLAGS_batch_size, FLAGS_batch));
  options.num_threads = absl::GetFlag(FLAGS_threads);
  QFUSE_ASSIGN_OR_RETURN(calib::CalibrationRun run, calib::Calibrate(*model.graph, *data, options));
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  absl::PrintF("calibrated %d tensors of %s (fusion %s) on %d samples with %s in %.3f s (%.0f samples/s)\n",
               run.table.tensors.size(), path, fusion::FusionLevelName(level), run.table.samples, run.table.method,
               run.seconds, run.table.samples / run.seconds);
  absl::PrintF("memory: histograms %.2f MiB, peak activations %.2f MiB, process peak RSS %.1f MiB\n",
               run.histogram_bytes / 1048576.0, run.peak_activation_bytes / 1048576.0, usage.ru_maxrss / 1024.0);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (!output.empty()) {
    const std::string out = ResolveUserPath(output);
    if (base::SameFile(out, path)) return absl::InvalidArgumentError(absl::StrCat(out, ": would overwrite the model"));
    QFUSE_RETURN_IF_ERROR(calib::WriteCalibrationTable(run.table, out));
    absl::PrintF("wrote %s\n", out);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace qfuse::tools

int main(int argc, char** argv) {
  return qfuse::tools::RunTool(argc, argv,
                               "Calibrates a model's activations on sample data and writes the table.",
                               qfuse::tools::Main);
}
