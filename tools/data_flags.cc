#include "tools/data_flags.h"

#include <filesystem>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "ir/tensor_proto.h"
#include "tools/workspace_path.h"

ABSL_FLAG(std::string, data_format, "auto", "data format: auto, idx, npy, pb, image, raw");
ABSL_FLAG(std::vector<std::string>, raw_shape, {}, "per-sample shape of raw float32 data, e.g. 3,224,224");
ABSL_FLAG(double, idx_scale, 1.0 / 255, "IDX/.npy uint8 -> float multiplier");
ABSL_FLAG(int, image_resize_shorter, 0, "images: resize the shorter side to this (0: no resize)");
ABSL_FLAG(int, image_center_crop, 0, "images: centre crop to this square (0: none)");
ABSL_FLAG(std::string, image_color, "rgb", "images: rgb, bgr or gray");
ABSL_FLAG(std::vector<std::string>, image_mean, {}, "images and uint8 IDX/.npy: per-channel mean, after scaling");
ABSL_FLAG(std::vector<std::string>, image_std, {}, "images and uint8 IDX/.npy: per-channel std, after scaling");
ABSL_FLAG(double, image_scale, 1.0 / 255, "images: pixel multiplier");
ABSL_FLAG(std::string, image_layout, "nchw", "images: nchw or nhwc");

namespace qfuse::tools {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::vector<float>> ParseFloats(const std::vector<std::string>& values, const char* flag) {
  std::vector<float> out;
  for (const std::string& v : values) {
    float f;
    if (!absl::SimpleAtof(v, &f)) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", v, "' is not a number"));
    out.push_back(f);
  }
  return out;
}

}  // namespace

absl::StatusOr<data::DataSource> ReaderDefaultsFromFlags() {
  data::DataSource d;
  QFUSE_ASSIGN_OR_RETURN(d.format, data::ParseDataFormat(absl::GetFlag(FLAGS_data_format)));
  for (const std::string& v : absl::GetFlag(FLAGS_raw_shape)) {
    int64_t dim;
    if (!absl::SimpleAtoi(v, &dim) || dim <= 0) return absl::InvalidArgumentError(absl::StrCat("--raw_shape: bad dim '", v, "'"));
    d.raw_shape.push_back(dim);
  }
  d.idx_scale = static_cast<float>(absl::GetFlag(FLAGS_idx_scale));
  d.image.resize_shorter = absl::GetFlag(FLAGS_image_resize_shorter);
  d.image.center_crop = absl::GetFlag(FLAGS_image_center_crop);
  const std::string color = absl::GetFlag(FLAGS_image_color);
  if (color == "rgb") {
    d.image.color = data::ImagePreprocess::Color::kRgb;
  } else if (color == "bgr") {
    d.image.color = data::ImagePreprocess::Color::kBgr;
  } else if (color == "gray") {
    d.image.color = data::ImagePreprocess::Color::kGray;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--image_color: '", color, "' is not rgb, bgr or gray"));
  }
  QFUSE_ASSIGN_OR_RETURN(d.image.mean, ParseFloats(absl::GetFlag(FLAGS_image_mean), "image_mean"));
  QFUSE_ASSIGN_OR_RETURN(d.image.std, ParseFloats(absl::GetFlag(FLAGS_image_std), "image_std"));
  d.image.scale = static_cast<float>(absl::GetFlag(FLAGS_image_scale));
  const std::string layout = absl::GetFlag(FLAGS_image_layout);
  if (layout != "nchw" && layout != "nhwc") {
    return absl::InvalidArgumentError(absl::StrCat("--image_layout: '", layout, "' is not nchw or nhwc"));
  }
  d.image.layout = layout == "nchw" ? data::ImagePreprocess::Layout::kNchw : data::ImagePreprocess::Layout::kNhwc;
  return d;
}

absl::StatusOr<std::vector<data::DataSource>> DataSourcesFromValues(const std::vector<std::string>& values,
                                                                     const data::DataSource& defaults) {
  std::vector<std::string> resolved;
  for (const std::string& v : values) {
    // "name:relative/path" resolves the path part; plain paths resolve whole.
    const size_t colon = v.rfind(':');
    const bool named = colon != std::string::npos && !fs::exists(ResolveUserPath(v));
    resolved.push_back(named ? v.substr(0, colon + 1) + ResolveUserPath(v.substr(colon + 1)) : ResolveUserPath(v));
  }
  return data::ParseDataSources(resolved, defaults);
}

bool IsBundledSample(const std::string& model_path) {
  for (const char* sample : {"models/resnet_small/model.onnx", "models/mobilenetv2_small/model.onnx"}) {
    for (const std::string& path : {std::string(sample), ResolveUserPath(sample)}) {  // runfiles, user's folder
      std::error_code ec;
      if (fs::exists(path, ec) && fs::equivalent(path, model_path, ec)) return true;
    }
  }
  return false;
}

absl::StatusOr<std::vector<data::DataSource>> CalibrationSources(const std::string& model_path,
                                                                  const std::vector<std::string>& values,
                                                                  const data::DataSource& defaults) {
  if (!values.empty()) return DataSourcesFromValues(values, defaults);
  if (!IsBundledSample(model_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat(model_path, ": --calib_data is required (only the bundled samples have default data)"));
  }
  const data::DataSource idx;  // the Fashion-MNIST files are IDX, whatever --data_format says
  return DataSourcesFromValues({std::string(kFashionMnistDir) + "train-images-idx3-ubyte.gz"}, idx);
}

absl::StatusOr<std::vector<ir::NamedTensor>> ReadInputFiles(const ir::Graph& graph,
                                                                 const std::vector<std::string>& files) {
  if (files.size() != graph.inputs().size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--inputs has %d files, the model has %d inputs", files.size(), graph.inputs().size()));
  }
  std::vector<ir::NamedTensor> inputs;
  for (size_t i = 0; i < files.size(); ++i) {
    QFUSE_ASSIGN_OR_RETURN(ir::NamedTensor t, ir::ReadTensorFile(ResolveUserPath(files[i])));
    std::string name = graph.inputs()[i]->name();
    for (const ir::Value* in : graph.inputs()) {
      if (in->name() == t.name) name = t.name;
    }
    inputs.push_back({name, std::move(t.tensor)});
  }
  return inputs;
}

}  // namespace qfuse::tools
