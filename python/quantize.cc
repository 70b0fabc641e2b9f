#include "python/quantize.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "absl/strings/str_cat.h"
#include "base/output_dir.h"
#include "calib/calibrator.h"
#include "data/data_source.h"
#include "data/tensor_dataset.h"
#include "ir/onnx_import.h"
#include "pipeline/quantize_pipeline.h"
#include "python/conversions.h"
#include "quant/deploy_target.h"
#include "runtime/cpu_isa.h"

namespace qfuse::python {
namespace {

namespace fs = std::filesystem;

constexpr char kQuantizeDoc[] = R"doc(quantize(model_path, calibration_data, *, method='auto',
         activation_headroom=1.0, fusion='full',
         target='qfuse', per_channel=True, reduce_range=None, activation_type=None,
         int8_as_uint8=None, unsigned_non_negative=None, bounded_below=None, integer_heads=None, keep_float=(), nodes_to_exclude=None, calib_samples=None,
         analysis_samples=0, output=None) -> dict

Quantizes a float ONNX model to an int8 QDQ ONNX model, as `bazel run //tools:quantize` does.

calibration_data: a path (str or os.PathLike; the spelling of the CLI's --calib_data: an .npy
  or IDX file, a folder of images or of TensorProto .pb files, a raw float32 file, or
  'input_name:path'), a list of such paths (one per model input), or any finite iterable of
  dicts {input name: numpy array}, one sample per dict (onnxruntime's CalibrationDataReader as
  a plain iterator). Each array is the model input with or without its leading batch dim of 1;
  it is copied once into qfuse's buffers, converted to the input's dtype on the way
  ('same_kind' casting; values are not rescaled). The whole iterable is read.
  Calibration uses the first calib_samples samples (default 512); evaluation uses samples held
  back from calibration, as the CLI does without --eval_data: those past calib_samples, or,
  when there are no more than calib_samples, the last quarter (calibration uses the rest).
method: 'auto', 'entropy', 'percentile', 'mse', 'max' or 'balanced_mse'.
activation_headroom: every activation threshold, once chosen, times this factor (> 0): headroom
  for deployment data beyond the calibration samples' ranges, at the cost of resolution.
fusion: 'full', 'bn', 'none' or 'all' (each of the three).
target: the runtime the model is made for, which decides where Q/DQ go: 'qfuse' (its own
  runtime; the most accurate placement), 'onnxruntime' (what its QDQ fusion runs in integer
  kernels) or 'tensorrt' (explicit quantization; fusion 'full' only).
per_channel: per-output-channel weight scales (else one per weight tensor).
reduce_range: 7-bit weights; None: the target's default (True for 'onnxruntime', else False).
activation_type: 'int8' / 'QInt8' or 'uint8' / 'QUInt8' (onnxruntime's spelling, also its
  QuantType members); None: the target's default ('uint8' for 'onnxruntime', else 'int8').
int8_as_uint8: int8 activations stored as uint8 with zero point 128 (the same grid and outputs;
  onnxruntime's x86 QLinearConv takes uint8 only); None: the target's default (True for
  'qfuse'; 'tensorrt' always INT8).
unsigned_non_negative: with int8_as_uint8, values non-negative by construction (Relu, Relu6,
  Sigmoid outputs and what pools or moves them) get zero point 0 and scale T / 255; None: the
  default (True where int8_as_uint8 is).
bounded_below: with unsigned_non_negative, values bounded below by construction (HardSwish >=
  -0.376, SiLU >= -0.279) get a uint8 grid of [max(L, -T), T]; None: the default (True where
  unsigned_non_negative is).
integer_heads: target 'qfuse' writes Conv units with a residual or activation as ConvInteger ->
  bias -> DequantizeLinear -> ..., which onnxruntime runs with qfuse's exact arithmetic; None:
  the default (True for 'qfuse', which the other targets do not use).
keep_float, nodes_to_exclude: names of nodes left in float (nodes_to_exclude is
  onnxruntime.quantization's name; both lists are used).
analysis_samples: evaluation samples for the per-layer analysis (0: no analysis).
output: output folder (default: <model folder>/<model stem>_qfuse). An output that would
  overwrite an input is refused.

Returns a dict: 'float_model', 'output_dir', 'calib_samples', 'eval_samples', and 'levels':
{level name ('full', or 'full/onnxruntime' for another target): {'target', 'reduce_range',
'activation_type' (as used), 'model', 'calibration_table' (JSON), 'calibration_cache' (TensorRT cache),
'top1' (None: no labels), 'agreement' (top-1 agreement with fp32, percent), 'sqnr_db',
'cosine', 'max_abs_diff', 'median_sample_sqnr_db' (first output vs fp32), 'nodes', 'quantized_activations',
'quantized_weights', 'float_ops', 'notes', 'seconds', and with analysis 'analysis'}}. With one
fusion level (the default), that level's entries are also at the top level.
Errors: ValueError (bad argument or data), FileNotFoundError (missing file), RuntimeError.)doc";

// The dtype of each model input, by name: arrays are converted to it.
std::map<std::string, ir::DataType> InputTypes(const std::string& model_path) {
  absl::StatusOr<ir::Model> model;
  {
    py::gil_scoped_release release;
    model = ir::LoadModel(model_path);
  }
  const ir::Model loaded = ValueOrThrow(std::move(model));
  std::map<std::string, ir::DataType> types;
  for (const ir::Value* input : loaded.graph->inputs()) types[input->name()] = input->type().dtype;
  return types;
}

// Every sample of an iterable of dicts, copied once into tensors of the model inputs' dtypes.
std::shared_ptr<const data::TensorSamples> SamplesFromIterable(py::handle data, const std::string& model_path) {
  const std::map<std::string, ir::DataType> types = InputTypes(model_path);
  auto samples = std::make_shared<data::TensorSamples>();
  for (py::handle item : py::iter(data)) {
    const int64_t index = static_cast<int64_t>(samples->size());
    if (!py::isinstance<py::dict>(item)) {
      throw py::type_error(absl::StrCat("calibration sample ", index, ": expected a dict {input name: array}, got ",
                                        std::string(py::str(item.get_type().attr("__name__")))));
    }
    std::vector<ir::NamedTensor> sample;
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(item)) {
      const std::string name = py::str(key);
      auto type = types.find(name);  // an unknown name is the dataset's error, with the input list
      const ir::DataType dtype = type == types.end() ? ir::DataType::kUndefined : type->second;
      sample.push_back(
          {name, TensorFromArray(value, dtype, absl::StrCat("calibration sample ", index, ", input '", name, "'"))});
    }
    samples->push_back(std::move(sample));
  }
  return samples;
}

// A list or tuple of paths (one per model input, as the CLI's comma-separated --calib_data).
bool IsPathList(py::handle data) {
  if (!py::isinstance<py::list>(data) && !py::isinstance<py::tuple>(data)) return false;
  const py::sequence items = py::reinterpret_borrow<py::sequence>(data);
  return py::len(items) > 0 && IsPath(items[0]);
}

quant::ActivationType ParseActivationType(py::handle value) {
  // onnxruntime's QuantType members carry their spelling in .name.
  const std::string text = py::isinstance<py::str>(value) ? py::str(value) : py::str(value.attr("name"));
  if (text == "int8" || text == "QInt8") return quant::ActivationType::kInt8;
  if (text == "uint8" || text == "QUInt8") return quant::ActivationType::kUint8;
  throw py::value_error(absl::StrCat("activation_type: '", text, "' is not int8, uint8, QInt8 or QUInt8"));
}

py::dict LevelDict(const pipeline::LevelResult& r) {
  py::dict d;
  d["target"] = quant::DeployTargetName(r.target);
  d["reduce_range"] = r.convert.reduce_range;
  d["activation_type"] = r.convert.activation_type == quant::ActivationType::kUint8 ? "uint8" : "int8";
  d["int8_as_uint8"] = r.convert.int8_as_uint8;
  d["integer_heads"] = r.conversion.integer_heads;
  d["model"] = r.model_file;
  d["calibration_table"] = r.table_file;
  d["calibration_cache"] = fs::path(r.table_file).replace_extension(".cache").string();
  d["top1"] = r.top1 < 0 ? py::object(py::none()) : py::float_(r.top1);
  d["agreement"] = r.agreement;
  d["sqnr_db"] = r.sqnr_db;
  d["cosine"] = r.cosine;
  d["max_abs_diff"] = r.max_abs_diff;
  d["median_sample_sqnr_db"] = r.outputs.empty() ? std::numeric_limits<double>::quiet_NaN() : r.outputs.front().median_sample_sqnr_db;
  d["nodes"] = r.float_nodes;
  d["quantized_activations"] = r.conversion.quantized_activations;
  d["quantized_weights"] = r.conversion.quantized_weights;
  d["float_ops"] = r.conversion.float_ops;
  d["notes"] = r.conversion.notes;
  d["seconds"] = py::dict(py::arg("load") = r.seconds.load, py::arg("fuse") = r.seconds.fuse,
                          py::arg("calibrate") = r.seconds.calibrate, py::arg("convert") = r.seconds.convert,
                          py::arg("evaluate") = r.seconds.evaluate, py::arg("analyze") = r.seconds.analyze);
  if (!r.analysis.layers.empty()) {
    py::list layers;
    for (const pipeline::LayerError& e : r.analysis.layers) {
      layers.append(py::dict(py::arg("node") = e.node, py::arg("kind") = e.kind, py::arg("output") = e.output,
                             py::arg("sqnr_accumulated") = e.sqnr_accumulated,
                             py::arg("sqnr_isolated") = e.sqnr_isolated));
    }
    d["analysis"] = layers;
  }
  return d;
}

py::dict Quantize(py::object model_path, py::object calibration_data, const std::string& method,
                  double activation_headroom, const std::string& fusion, const std::string& target, bool per_channel,
                  py::object reduce_range, py::object activation_type, py::object int8_as_uint8,
                  py::object unsigned_non_negative, py::object bounded_below, py::object integer_heads,
                  std::vector<std::string> keep_float, py::object nodes_to_exclude, py::object calib_samples,
                  int64_t analysis_samples, py::object output) {
  ThrowIfError(runtime::CheckIsaCapEnvironment());
  pipeline::QuantizeConfig c;
  c.model_path = PathString(model_path);
  if (!calib_samples.is_none()) c.calib_samples = calib_samples.cast<int64_t>();
  if (c.calib_samples <= 0) throw py::value_error("calib_samples must be positive");
  if (analysis_samples < 0) throw py::value_error("analysis_samples must be >= 0");
  c.analysis_samples = analysis_samples;
  c.threshold.method = ValueOrThrow(calib::ParseCalibrationMethod(method));
  // Also checked by RunQuantize, but here before an iterable of data is read (below).
  ThrowIfError(calib::CheckActivationHeadroom(activation_headroom));
  c.activation_headroom = activation_headroom;
  if (fusion == "all") {
    c.levels = {fusion::FusionLevel::kFull, fusion::FusionLevel::kBn, fusion::FusionLevel::kNone};
  } else {
    c.levels = {ValueOrThrow(fusion::ParseFusionLevel(fusion))};
  }
  c.targets = {ValueOrThrow(quant::ParseDeployTarget(target))};
  c.convert.per_channel_weights = per_channel;
  // None: the target's default (quant::WithTargetDefaults, applied by the pipeline).
  c.user_choices.reduce_range = !reduce_range.is_none();
  if (c.user_choices.reduce_range) c.convert.reduce_range = reduce_range.cast<bool>();
  c.user_choices.activation_type = !activation_type.is_none();
  if (c.user_choices.activation_type) c.convert.activation_type = ParseActivationType(activation_type);
  c.user_choices.int8_as_uint8 = !int8_as_uint8.is_none();
  if (c.user_choices.int8_as_uint8) c.convert.int8_as_uint8 = int8_as_uint8.cast<bool>();
  c.user_choices.unsigned_non_negative = !unsigned_non_negative.is_none();
  if (c.user_choices.unsigned_non_negative) c.convert.unsigned_non_negative = unsigned_non_negative.cast<bool>();
  c.user_choices.bounded_below = !bounded_below.is_none();
  if (c.user_choices.bounded_below) c.convert.bounded_below = bounded_below.cast<bool>();
  c.user_choices.integer_heads = !integer_heads.is_none();
  if (c.user_choices.integer_heads) c.convert.integer_heads = integer_heads.cast<bool>();
  c.convert.keep_float.insert(keep_float.begin(), keep_float.end());
  if (!nodes_to_exclude.is_none()) {
    for (const std::string& n : nodes_to_exclude.cast<std::vector<std::string>>()) c.convert.keep_float.insert(n);
  }
  const fs::path model(c.model_path);
  c.output_dir = output.is_none() ? (model.parent_path() / (model.stem().string() + "_qfuse")).string()
                                  : PathString(output);
  c.show_progress = false;
  // The data last: the arguments above fail before an iterable is read.
  if (IsPath(calibration_data)) {
    c.calib_sources = ValueOrThrow(data::ParseDataSources({PathString(calibration_data)}));
  } else if (IsPathList(calibration_data)) {
    std::vector<std::string> values;
    for (py::handle v : calibration_data) values.push_back(PathString(v));
    c.calib_sources = ValueOrThrow(data::ParseDataSources(values));
  } else {
    c.calib_tensors = SamplesFromIterable(calibration_data, c.model_path);
  }

  absl::StatusOr<pipeline::QuantizeResult> result;
  {
    py::gil_scoped_release release;
    // One run per output folder (as the CLI), held until the run ends.
    absl::StatusOr<std::unique_ptr<base::OutputDirLock>> lock = base::OutputDirLock::Acquire(c.output_dir);
    result = lock.ok() ? pipeline::RunQuantize(c) : lock.status();
  }
  const pipeline::QuantizeResult& r = ValueOrThrow(std::move(result));
  py::dict out;
  out["float_model"] = r.model_path;
  out["output_dir"] = c.output_dir;
  out["calib_samples"] = r.calib_samples;
  out["eval_samples"] = r.eval_samples;
  out["fp32_top1"] = r.fp32_top1 < 0 ? py::object(py::none()) : py::float_(r.fp32_top1);
  py::dict levels;
  for (const pipeline::LevelResult& level : r.levels) levels[py::str(pipeline::ResultName(level))] = LevelDict(level);
  out["levels"] = levels;
  if (r.levels.size() == 1) {
    for (auto [key, value] : LevelDict(r.levels[0])) out[key] = value;
  }
  return out;
}

}  // namespace

void DefineQuantize(py::module_& module) {
  module.def("quantize", &Quantize, kQuantizeDoc, py::arg("model_path"), py::arg("calibration_data"), py::kw_only(),
             py::arg("method") = "auto", py::arg("activation_headroom") = 1.0, py::arg("fusion") = "full",
             py::arg("target") = "qfuse", py::arg("per_channel") = true, py::arg("reduce_range") = py::none(),
             py::arg("activation_type") = py::none(), py::arg("int8_as_uint8") = py::none(),
             py::arg("unsigned_non_negative") = py::none(), py::arg("bounded_below") = py::none(),
             py::arg("integer_heads") = py::none(), py::arg("keep_float") = std::vector<std::string>{},
             py::arg("nodes_to_exclude") = py::none(), py::arg("calib_samples") = py::none(),
             py::arg("analysis_samples") = 0, py::arg("output") = py::none());
}

}  // namespace qfuse::python
