#include "data/dataset_sources.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/checked_math.h"
#include "base/status_macros.h"
#include "data/idx.h"
#include "data/image_decode.h"
#include "data/npy.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"

namespace qfuse::data {
namespace {

namespace fs = std::filesystem;

constexpr char kTestDataSetPrefix[] = "test_data_set_";

std::string LowerExtension(const fs::path& path) { return absl::AsciiStrToLower(path.extension().string()); }

bool IsImageFile(const fs::path& path) {
  const std::string ext = LowerExtension(path);
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

bool IsPbFile(const fs::path& path) { return LowerExtension(path) == ".pb"; }

// k for a file named input_<k>.pb, else -1.
int TestDataInputIndex(const fs::path& path) {
  const std::string filename = path.filename().string();
  absl::string_view name = filename;
  int k = -1;
  if (!absl::ConsumePrefix(&name, "input_") || !absl::ConsumeSuffix(&name, ".pb") || !absl::SimpleAtoi(name, &k)) {
    return -1;
  }
  return k;
}

absl::Status NoSamples(const std::string& path, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": no samples (", why, ")"));
}

// Sorted entries of `dir` (not recursive) satisfying `keep`.
absl::StatusOr<std::vector<fs::path>> ListFolder(const std::string& dir, bool (*keep)(const fs::directory_entry&)) {
  std::error_code ec;
  std::vector<fs::path> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (keep(*it)) out.push_back(it->path());
  }
  if (ec) return absl::NotFoundError(absl::StrCat(dir, ": cannot list folder (", ec.message(), ")"));
  std::sort(out.begin(), out.end());
  return out;
}

// Image files under `dir`, recursively, as paths relative to `dir` sorted by their text.
absl::StatusOr<std::vector<fs::path>> ListImages(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::path> out;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && IsImageFile(it->path())) out.push_back(it->path().lexically_relative(dir));
  }
  if (ec) return absl::NotFoundError(absl::StrCat(dir, ": cannot list folder (", ec.message(), ")"));
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) { return a.generic_string() < b.generic_string(); });
  return out;
}

bool IsPbEntry(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_regular_file(ec) && IsPbFile(e.path());
}
bool IsTestDataSetEntry(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_directory(ec) && absl::StartsWith(e.path().filename().string(), kTestDataSetPrefix);
}

// ---- Arrays held in memory: IDX, .npy and raw float32 files. Dims [samples, ...].

class ArraySource : public SampleSource {
 public:
  ArraySource(std::string path, ir::Tensor data) : path_(std::move(path)), data_(std::move(data)) {
    info_.dtype = data_.dtype();
    info_.dims.assign(data_.dims().begin() + 1, data_.dims().end());
    sample_bytes_ = ir::NumElements(info_.dims) * ir::ElementSize(info_.dtype);
  }
  int64_t size() const override { return data_.dims()[0]; }
  SampleInfo Info(int64_t) const override { return info_; }
  absl::Status Read(int64_t index, void* out) override {
    std::memcpy(out, static_cast<const uint8_t*>(data_.raw_data()) + index * sample_bytes_, sample_bytes_);
    return absl::OkStatus();
  }
  std::string Describe(int64_t index) const override { return absl::StrCat(path_, " sample ", index); }

 private:
  std::string path_;
  ir::Tensor data_;
  SampleInfo info_;
  int64_t sample_bytes_ = 0;
};

absl::StatusOr<ir::Tensor> ReadRawFloat32File(const std::string& path, const std::vector<int64_t>& sample_dims,
                                              int64_t max_samples) {
  if (sample_dims.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": raw float32 data needs a per-sample shape (raw_shape)"));
  }
  for (int64_t d : sample_dims) {
    if (d <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": raw_shape ", ir::DimsToString(sample_dims), " must have positive dims"));
    }
  }
  std::error_code ec;
  const int64_t file_bytes = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) return absl::NotFoundError(absl::StrCat(path, ": cannot open (", ec.message(), ")"));
  absl::StatusOr<int64_t> checked_sample_bytes =
      base::CheckedByteCount(sample_dims, static_cast<int64_t>(sizeof(float)), path + ": raw_shape");
  if (!checked_sample_bytes.ok()) return checked_sample_bytes.status();
  const int64_t sample_bytes = *checked_sample_bytes;
  if (file_bytes == 0) return NoSamples(path, "empty file");
  if (file_bytes % sample_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": file size ", file_bytes,
                                                   " bytes is not a multiple of the sample size ", sample_bytes,
                                                   " bytes (raw_shape ", ir::DimsToString(sample_dims), " float32)"));
  }
  int64_t samples = file_bytes / sample_bytes;
  if (max_samples > 0) samples = std::min(samples, max_samples);
  std::vector<int64_t> dims = {samples};
  dims.insert(dims.end(), sample_dims.begin(), sample_dims.end());
  QFUSE_ASSIGN_OR_RETURN(ir::Tensor tensor, ir::Tensor::CreateUninitialized(ir::DataType::kFloat32, dims, "raw data"));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  const bool ok = std::fread(tensor.raw_data(), 1, tensor.byte_size(), f) == tensor.byte_size();
  std::fclose(f);
  if (!ok) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return tensor;
}

// ---- ONNX TensorProto .pb files, each one sample or a batch of samples.

class TensorProtoSource : public SampleSource {
 public:
  struct File {
    std::string path;
    std::vector<int64_t> stored_dims;  // the whole tensor's dims
    SampleInfo info;                   // one sample of this file
    bool batch;                        // leading dim counts samples
    int64_t first;                     // index of its first sample
    int64_t count;                     // samples used from it
  };

  static absl::StatusOr<std::unique_ptr<SampleSource>> Open(const std::vector<std::string>& paths,
                                                            const SourceContext& context) {
    auto source = std::unique_ptr<TensorProtoSource>(new TensorProtoSource());
    int64_t total = 0;
    for (const std::string& path : paths) {
      if (context.max_samples > 0 && total >= context.max_samples) break;
      QFUSE_ASSIGN_OR_RETURN(ir::NamedTensor named, ir::ReadTensorFile(path));
      const ir::Tensor& t = named.tensor;
      File file{path, t.dims(), {t.dtype(), t.dims()}, false, total, 1};
      if (t.rank() > 0 && (context.model_rank < 0 || t.rank() == context.model_rank)) {
        file.batch = true;
        file.count = t.dims()[0];
        file.info.dims.erase(file.info.dims.begin());
      }
      if (context.max_samples > 0) file.count = std::min(file.count, context.max_samples - total);
      if (file.count == 0) continue;
      total += file.count;
      source->files_.push_back(std::move(file));
    }
    if (total == 0) return NoSamples(paths.front(), "every .pb file holds an empty batch");
    source->size_ = total;
    return std::unique_ptr<SampleSource>(std::move(source));
  }

  int64_t size() const override { return size_; }
  SampleInfo Info(int64_t index) const override { return FileOf(index).info; }
  absl::Status Read(int64_t index, void* out) override {
    const File& file = FileOf(index);
    if (cached_path_ != file.path) {
      cached_path_.clear();
      QFUSE_ASSIGN_OR_RETURN(ir::NamedTensor named, ir::ReadTensorFile(file.path));
      if (named.tensor.dtype() != file.info.dtype || named.tensor.dims() != file.stored_dims) {
        return absl::DataLossError(absl::StrCat(file.path, ": changed while reading (now ",
                                                ir::DataTypeName(named.tensor.dtype()),
                                                ir::DimsToString(named.tensor.dims()), ")"));
      }
      cached_ = std::move(named.tensor);
      cached_path_ = file.path;
    }
    const int64_t bytes = ir::NumElements(file.info.dims) * ir::ElementSize(file.info.dtype);
    std::memcpy(out, static_cast<const uint8_t*>(cached_.raw_data()) + (index - file.first) * bytes, bytes);
    return absl::OkStatus();
  }
  std::string Describe(int64_t index) const override {
    const File& file = FileOf(index);
    return file.batch ? absl::StrCat(file.path, " sample ", index - file.first) : file.path;
  }

 private:
  TensorProtoSource() = default;
  const File& FileOf(int64_t index) const {
    auto it = std::upper_bound(files_.begin(), files_.end(), index,
                               [](int64_t i, const File& f) { return i < f.first; });
    return *(it - 1);
  }

  std::vector<File> files_;
  int64_t size_ = 0;
  std::string cached_path_;
  ir::Tensor cached_;
};

// The .pb files a kTensorProtoDir source reads, in order (see DataSource).
absl::StatusOr<std::vector<std::string>> TensorProtoFiles(const std::string& path, int position) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec)) return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
    return std::vector<std::string>{path};
  }
  const std::string wanted = absl::StrCat("input_", position, ".pb");
  QFUSE_ASSIGN_OR_RETURN(std::vector<fs::path> pbs, ListFolder(path, IsPbEntry));
  const bool test_data_layout =
      std::any_of(pbs.begin(), pbs.end(), [](const fs::path& p) { return TestDataInputIndex(p) >= 0; });
  if (test_data_layout) {
    const fs::path file = fs::path(path) / wanted;
    if (!fs::exists(file, ec)) {
      return NoSamples(path, absl::StrCat("ONNX test-data folder without ", wanted, " for model input #", position));
    }
    return std::vector<std::string>{file.string()};
  }
  if (!pbs.empty()) {
    std::vector<std::string> out;
    for (const fs::path& p : pbs) out.push_back(p.string());
    return out;
  }
  QFUSE_ASSIGN_OR_RETURN(std::vector<fs::path> sets, ListFolder(path, IsTestDataSetEntry));
  if (sets.empty()) return NoSamples(path, "no .pb files");
  std::vector<std::string> out;
  for (const fs::path& set : sets) {
    const fs::path file = set / wanted;
    if (!fs::exists(file, ec)) {
      return absl::NotFoundError(absl::StrCat(set.string(), ": no ", wanted, " for model input #", position));
    }
    out.push_back(file.string());
  }
  return out;
}

// ---- PNG/JPEG images, one sample each, decoded and preprocessed on read.

class ImageSource : public SampleSource {
 public:
  static absl::StatusOr<std::unique_ptr<SampleSource>> Open(const DataSource& source, const SourceContext& context) {
    QFUSE_RETURN_IF_ERROR(ValidateImagePreprocess(source.image));
    auto out = std::unique_ptr<ImageSource>(new ImageSource(source.image));
    std::error_code ec;
    if (fs::is_directory(source.path, ec)) {
      QFUSE_ASSIGN_OR_RETURN(std::vector<fs::path> relative, ListImages(source.path));
      if (relative.empty()) return NoSamples(source.path, "no .png, .jpg or .jpeg files");
      for (const fs::path& r : relative) out->paths_.push_back((fs::path(source.path) / r).string());
    } else if (fs::exists(source.path, ec)) {
      out->paths_.push_back(source.path);
    } else {
      return absl::NotFoundError(absl::StrCat(source.path, ": no such file or folder"));
    }
    if (context.max_samples > 0 && static_cast<int64_t>(out->paths_.size()) > context.max_samples) {
      out->paths_.resize(context.max_samples);
    }
    for (const std::string& path : out->paths_) {
      QFUSE_ASSIGN_OR_RETURN(ImageHeader header, ReadImageHeader(path));
      absl::StatusOr<std::vector<int64_t>> dims = PreprocessedDims(header.height, header.width, source.image);
      if (!dims.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", dims.status().message()));
      out->dims_.push_back(*std::move(dims));
    }
    return std::unique_ptr<SampleSource>(std::move(out));
  }

  int64_t size() const override { return static_cast<int64_t>(paths_.size()); }
  SampleInfo Info(int64_t index) const override { return {ir::DataType::kFloat32, dims_[index]}; }
  absl::Status Read(int64_t index, void* out) override {
    QFUSE_ASSIGN_OR_RETURN(Image image, DecodeImage(paths_[index]));
    absl::StatusOr<std::vector<int64_t>> dims = PreprocessedDims(image.height, image.width, options_);
    if (!dims.ok() || *dims != dims_[index]) {
      return absl::DataLossError(absl::StrCat(paths_[index], ": decoded size ", image.height, "x", image.width,
                                              " (HxW) differs from its header"));
    }
    absl::Status status = PreprocessImage(
        image, options_, absl::Span<float>(static_cast<float*>(out), static_cast<size_t>(ir::NumElements(dims_[index]))));
    if (!status.ok()) return absl::Status(status.code(), absl::StrCat(paths_[index], ": ", status.message()));
    return absl::OkStatus();
  }
  std::string Describe(int64_t index) const override { return paths_[index]; }

 private:
  explicit ImageSource(ImagePreprocess options) : options_(std::move(options)) {}

  ImagePreprocess options_;
  std::vector<std::string> paths_;
  std::vector<std::vector<int64_t>> dims_;  // preprocessed sample dims per image
};

absl::StatusOr<std::unique_ptr<SampleSource>> ArrayOrNoSamples(const std::string& path, ir::Tensor data) {
  if (data.dims()[0] == 0) return NoSamples(path, "the array's first dim is 0");
  return std::unique_ptr<SampleSource>(new ArraySource(path, std::move(data)));
}

}  // namespace

absl::StatusOr<DataFormat> DetectDataFormat(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
  if (fs::is_directory(status)) {
    QFUSE_ASSIGN_OR_RETURN(std::vector<fs::path> pbs, ListFolder(path, IsPbEntry));
    QFUSE_ASSIGN_OR_RETURN(std::vector<fs::path> sets, ListFolder(path, IsTestDataSetEntry));
    const bool has_pb = !pbs.empty() || !sets.empty();
    QFUSE_ASSIGN_OR_RETURN(std::vector<fs::path> images, ListImages(path));
    if (has_pb && !images.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": holds both .pb files and images; give the data format explicitly"));
    }
    if (has_pb) return DataFormat::kTensorProtoDir;
    if (!images.empty()) return DataFormat::kImageDir;
    return NoSamples(path, "no .pb, .png, .jpg or .jpeg files");
  }
  const std::string name = absl::AsciiStrToLower(fs::path(path).filename().string());
  const std::string ext = LowerExtension(path);
  if (ext == ".npy") return DataFormat::kNpy;
  if (ext == ".pb") return DataFormat::kTensorProtoDir;
  if (IsImageFile(path)) return DataFormat::kImageDir;
  if (ext == ".raw" || ext == ".bin" || ext == ".f32") return DataFormat::kRawFloat32;
  if (ext == ".gz" || ext == ".idx" || absl::EndsWith(name, "-ubyte")) return DataFormat::kIdx;
  // By content.
  uint8_t head[6] = {};
  size_t got = 0;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    got = std::fread(head, 1, sizeof(head), f);
    std::fclose(f);
  }
  if (got >= 6 && std::memcmp(head, "\x93NUMPY", 6) == 0) return DataFormat::kNpy;
  if (got >= 2 && head[0] == 0x1F && head[1] == 0x8B) return DataFormat::kIdx;  // gzip
  if (got >= 4 && head[0] == 0 && head[1] == 0 && (head[2] == 0x08 || head[2] == 0x0D) && head[3] > 0) {
    return DataFormat::kIdx;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": cannot tell the data format from the name or contents; give it explicitly (idx, npy, pb, image, raw)"));
}

absl::StatusOr<std::unique_ptr<SampleSource>> OpenSampleSource(const DataSource& source, DataFormat format,
                                                               const SourceContext& context) {
  switch (format) {
    case DataFormat::kIdx: {
      QFUSE_ASSIGN_OR_RETURN(ir::Tensor data, ReadIdxFile(source.path, context.max_samples));
      return ArrayOrNoSamples(source.path, std::move(data));
    }
    case DataFormat::kNpy: {
      QFUSE_ASSIGN_OR_RETURN(ir::Tensor data, ReadNpyFile(source.path, context.max_samples));
      return ArrayOrNoSamples(source.path, std::move(data));
    }
    case DataFormat::kRawFloat32: {
      QFUSE_ASSIGN_OR_RETURN(ir::Tensor data, ReadRawFloat32File(source.path, source.raw_shape, context.max_samples));
      return ArrayOrNoSamples(source.path, std::move(data));
    }
    case DataFormat::kTensorProtoDir: {
      QFUSE_ASSIGN_OR_RETURN(std::vector<std::string> files, TensorProtoFiles(source.path, context.input_position));
      return TensorProtoSource::Open(files, context);
    }
    case DataFormat::kImageDir:
      return ImageSource::Open(source, context);
    case DataFormat::kAuto:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(source.path, ": data format must be resolved before opening"));
}

}  // namespace qfuse::data
