// Fuzz targets for the data readers, chosen at build time by QFUSE_FUZZ_READER:
//   npy: ReadNpyFile (whole file and first sample); idx: ReadIdxFile and ReadIdxLabels
//   (plain or gzip); image: ReadImageHeader and DecodeImage (PNG or JPEG by signature);
//   pb: ReadTensorFile (a serialized TensorProto); table: the JSON and TensorRT-cache
//   calibration table parsers on the same text.
// A successful read must describe exactly the data it holds.
#include <string>

#include "base/checked_math.h"
#include "calib/calibration_table.h"
#include "data/idx.h"
#include "data/image_decode.h"
#include "data/npy.h"
#include "ir/tensor_proto.h"
#include "tests/fuzz/fuzz_input.h"

namespace qfuse::fuzz {
namespace {

void CheckTensor(const absl::StatusOr<ir::Tensor>& t) {
  if (!t.ok()) {
    Check(!t.status().message().empty(), "an error without a message");
    return;
  }
  absl::StatusOr<int64_t> count = base::CheckedElementCount(t->dims(), "read");
  Check(count.ok() && *count == t->num_elements(), "a tensor's element count disagrees with its dims");
}

void FuzzNpy(const std::string& path) {
  CheckTensor(data::ReadNpyFile(path));
  CheckTensor(data::ReadNpyFile(path, 1));
}

void FuzzIdx(const std::string& path) {
  CheckTensor(data::ReadIdxFile(path));
  absl::StatusOr<std::vector<int64_t>> labels = data::ReadIdxLabels(path);
  (void)labels;
}

void FuzzImage(const std::string& path) {
  absl::StatusOr<data::ImageHeader> header = data::ReadImageHeader(path);
  // Large images are valid and only slow the fuzzer down: decode up to 4M pixels.
  if (!header.ok() || header->height * header->width > (int64_t{1} << 22)) return;
  absl::StatusOr<data::Image> image = data::DecodeImage(path);
  if (!image.ok()) return;
  Check(image->height == header->height && image->width == header->width, "decoded size differs from header");
  Check(static_cast<int64_t>(image->pixels.size()) == image->height * image->width * image->channels,
        "pixel buffer size differs from height * width * channels");
}

void FuzzTensorPb(const std::string& path) {
  absl::StatusOr<ir::NamedTensor> t = ir::ReadTensorFile(path);
  if (t.ok()) CheckTensor(t->tensor);
}

void FuzzTable(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<calib::CalibrationTable> json = calib::ParseJson(text, "fuzz.json");
  absl::StatusOr<calib::CalibrationTable> cache = calib::ParseTensorRtCache(text, "fuzz.cache");
  (void)json;
  (void)cache;
}

}  // namespace
}  // namespace qfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qfuse::fuzz;  // NOLINT: a two-line entry point
  static const bool initialised = (InitFuzzProcess(), true);
  (void)initialised;
#if defined(QFUSE_FUZZ_READER_npy)
  FuzzNpy(WriteInputFile(data, size, ".npy"));
#elif defined(QFUSE_FUZZ_READER_idx)
  FuzzIdx(WriteInputFile(data, size, ".idx"));
#elif defined(QFUSE_FUZZ_READER_image)
  FuzzImage(WriteInputFile(data, size, ".img"));
#elif defined(QFUSE_FUZZ_READER_pb)
  FuzzTensorPb(WriteInputFile(data, size, ".pb"));
#elif defined(QFUSE_FUZZ_READER_table)
  FuzzTable(data, size);
#else
#error "define QFUSE_FUZZ_READER_<npy|idx|image|pb|table>"
#endif
  return 0;
}
