// Where a model input's calibration samples come from (IDX, .npy, folders of ONNX
// TensorProto .pb files or PNG/JPEG images, raw float32 files), and the CLI spellings.
#ifndef QFUSE_DATA_DATA_SOURCE_H_
#define QFUSE_DATA_DATA_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/image_preprocess.h"

namespace qfuse::data {

// How a source's file or folder is read. kAuto decides by the path:
//  - a folder holding .pb files (or test_data_set_* sub-folders): kTensorProtoDir;
//  - a folder holding .png / .jpg / .jpeg files (searched recursively): kImageDir;
//  - a file: *.npy -> kNpy; *-ubyte, *.idx, *.gz -> kIdx; *.pb -> kTensorProtoDir (one
//    file); *.png / *.jpg / *.jpeg -> kImageDir (one image); *.raw, *.bin, *.f32 -> kRawFloat32;
//    otherwise by content (NumPy magic, gzip magic, IDX magic).
enum class DataFormat { kAuto, kIdx, kNpy, kTensorProtoDir, kImageDir, kRawFloat32 };

// "auto", "idx", "npy", "pb", "image", "raw" (the CLI spellings).
const char* DataFormatName(DataFormat format);
absl::StatusOr<DataFormat> ParseDataFormat(absl::string_view name);

// Where one model input's samples come from, mirroring the CLI flags.
//
// Per format, what a sample is:
//  - kIdx / kNpy: item i of the array (the first dim is the sample dim); uint8 data feeds a
//    FLOAT input as value * idx_scale (through PixelScaler: 1/255 divides by 255), then
//    (v - image.mean[c]) / image.std[c] when those are given (one value, or one per channel
//    with c the sample's leading dim), or a UINT8 input unchanged; float32 data feeds FLOAT
//    inputs only, unchanged.
//  - kTensorProtoDir: the folder's .pb files sorted by name. In the ONNX test-data layout
//    (files named input_<k>.pb, next to output_<k>.pb) only input_<k>.pb is read, k being the
//    model input's position; a folder of test_data_set_* sub-folders reads each set's
//    input_<k>.pb in set-name order. A file whose rank equals the model input's rank (or any
//    file, when that rank is unknown) holds a batch: its leading dim counts samples. Any other
//    file holds one sample. Its dtype must be the input's dtype.
//  - kImageDir: the folder's PNG/JPEG files, searched recursively and sorted by relative path,
//    one sample each, preprocessed by `image` (FLOAT inputs only).
//  - kRawFloat32: a headerless little-endian float32 file of consecutive samples, each
//    shaped `raw_shape`; the file size must be a multiple of the sample size.
// A sample's shape may differ from the input's per-sample shape (the declared shape without
// its leading batch dim) only in rank: its element count must match ([28,28] feeds [1,28,28]).
// Unknown per-sample dims of the input are taken from the first sample.
struct DataSource {
  std::string input_name;                 // model input this feeds ("" = the model's only input)
  std::string path;                       // file or folder
  DataFormat format = DataFormat::kAuto;  // auto: by extension / folder contents
  std::vector<int64_t> raw_shape;         // per-sample shape for kRawFloat32
  ImagePreprocess image;
  float idx_scale = 1.f / 255;            // IDX/NPY uint8 -> float scaling
};

// Parses "name:path" or "path" CLI values into DataSources. Each result starts as a copy of
// `defaults` (format, raw_shape, image preprocessing and idx_scale from the other flags) with
// input_name and path set. A value that names an existing file or folder is a path;
// otherwise it is split at its last ':' into name and path, so names may contain ':'
// ("input:0:/data/x.npy"). Fails on an empty value or path, an empty name before ':',
// a duplicate input name, or more than one unnamed value.
absl::StatusOr<std::vector<DataSource>> ParseDataSources(const std::vector<std::string>& flag_values,
                                                         const DataSource& defaults = {});

}  // namespace qfuse::data

#endif  // QFUSE_DATA_DATA_SOURCE_H_
