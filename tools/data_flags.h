// The data flags every qfuse tool shares: how sample files are read (--data_format, --raw_shape,
// --idx_scale, --image_*), the data::DataSources a data flag's values name, and --inputs files.
//
// Each tool defines its own data-path flags, named --<role>_data with the count --<role>_samples:
// --calib_data / --calib_samples (quantize, calibrate), --eval_data / --eval_samples (quantize),
// --data / --data_samples (run, compare). Their values are "path" or "input_name:path" per
// model input, read with the reader flags below.
#ifndef QFUSE_TOOLS_DATA_FLAGS_H_
#define QFUSE_TOOLS_DATA_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/data_source.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace qfuse::tools {

// What every data flag's sources start from: format, raw shape, uint8 scaling and image
// preprocessing as the reader flags say. Errors name the flag.
absl::StatusOr<data::DataSource> ReaderDefaultsFromFlags();

// A data flag's values (paths relative to where `bazel run` started; "name:relative/path"
// resolves its path part), each a copy of `defaults` (calib::ParseDataSources).
absl::StatusOr<std::vector<data::DataSource>> DataSourcesFromValues(const std::vector<std::string>& values,
                                                                     const data::DataSource& defaults);

// The bundled samples (models/resnet_small, models/mobilenetv2_small of this workspace) were
// trained on Fashion-MNIST (Debian's dataset-fashion-mnist): the only models whose data has a
// default, read as IDX whatever the reader flags say.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist/";
bool IsBundledSample(const std::string& model_path);

// --calib_data for `model_path`: `values` read with `defaults`; no values: Fashion-MNIST's
// training images for a bundled sample, else an error saying --calib_data is required.
absl::StatusOr<std::vector<data::DataSource>> CalibrationSources(const std::string& model_path,
                                                                  const std::vector<std::string>& values,
                                                                  const data::DataSource& defaults);

// --inputs (run, fuse): one TensorProto .pb file per graph input, each feeding the input its
// stored name names, else the input at its position.
absl::StatusOr<std::vector<ir::NamedTensor>> ReadInputFiles(const ir::Graph& graph,
                                                                 const std::vector<std::string>& files);

}  // namespace qfuse::tools

#endif  // QFUSE_TOOLS_DATA_FLAGS_H_
