#include "data/data_source.h"

#include <sys/stat.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace qfuse::data {
namespace {

bool PathExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

const char* DataFormatName(DataFormat format) {
  switch (format) {
    case DataFormat::kAuto: return "auto";
    case DataFormat::kIdx: return "idx";
    case DataFormat::kNpy: return "npy";
    case DataFormat::kTensorProtoDir: return "pb";
    case DataFormat::kImageDir: return "image";
    case DataFormat::kRawFloat32: return "raw";
  }
  return "?";
}

absl::StatusOr<DataFormat> ParseDataFormat(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (DataFormat format : {DataFormat::kAuto, DataFormat::kIdx, DataFormat::kNpy, DataFormat::kTensorProtoDir,
                            DataFormat::kImageDir, DataFormat::kRawFloat32}) {
    if (lower == DataFormatName(format)) return format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown data format '", name, "' (expected auto, idx, npy, pb, image or raw)"));
}

absl::StatusOr<std::vector<DataSource>> ParseDataSources(const std::vector<std::string>& flag_values,
                                                         const DataSource& defaults) {
  std::vector<DataSource> sources;
  absl::flat_hash_set<std::string> names;
  bool have_unnamed = false;
  for (const std::string& value : flag_values) {
    DataSource source = defaults;
    const size_t colon = value.rfind(':');
    if (colon == std::string::npos || PathExists(value)) {
      source.input_name.clear();
      source.path = value;
    } else {
      source.input_name = value.substr(0, colon);
      source.path = value.substr(colon + 1);
      if (source.input_name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("calibration data '", value, "': empty input name before ':'"));
      }
    }
    if (source.path.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("calibration data '", value, "': empty path"));
    }
    if (source.input_name.empty()) {
      if (have_unnamed) {
        return absl::InvalidArgumentError(absl::StrCat(
            "calibration data '", value, "': more than one value without an input name; use name:path"));
      }
      have_unnamed = true;
    } else if (!names.insert(source.input_name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("calibration data '", value, "': input '", source.input_name, "' is given twice"));
    }
    sources.push_back(std::move(source));
  }
  return sources;
}

}  // namespace qfuse::data
