#include "calib/calibration_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "numerics/threshold_scale.h"
#include <nlohmann/json.hpp>

namespace qfuse::calib {
namespace {

constexpr char kTensorRtVersion[] = "TRT-8601-";
constexpr char kJsonFormat[] = "qfuse-calibration";

std::string TensorRtAlgorithm(const std::string& method) {
  if (method == "entropy") return "EntropyCalibration2";
  if (method == "max") return "MinMaxCalibration";
  return "LegacyCalibration";
}

uint32_t FloatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

float BitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

}  // namespace

const TensorRange* CalibrationTable::Find(const std::string& name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorRange& r, const std::string& n) { return r.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

std::string ToTensorRtCache(const CalibrationTable& table) {
  std::string out = absl::StrCat(kTensorRtVersion, TensorRtAlgorithm(table.method), "\n");
  for (const TensorRange& r : table.tensors) absl::StrAppendFormat(&out, "%s: %08x\n", r.name, FloatBits(r.scale));
  return out;
}

absl::StatusOr<CalibrationTable> ParseTensorRtCache(const std::string& text, const std::string& what) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty() || !absl::StartsWith(lines[0], "TRT-")) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a TensorRT calibration cache (no TRT- header)"));
  }
  CalibrationTable table;
  const std::string& header = lines[0];
  table.method = absl::EndsWith(header, "EntropyCalibration2") || absl::EndsWith(header, "EntropyCalibration")
                     ? "entropy"
                 : absl::EndsWith(header, "MinMaxCalibration") ? "max"
                                                               : "percentile";
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].rfind(": ");
    uint32_t bits = 0;
    if (colon == std::string::npos || lines[i].size() - colon - 2 != 8 ||
        !absl::SimpleHexAtoi(lines[i].substr(colon + 2), &bits)) {
      return absl::InvalidArgumentError(absl::StrFormat("%s line %d: expected 'name: <8 hex digits>', got '%s'", what,
                                                        i + 1, lines[i]));
    }
    TensorRange r;
    r.name = lines[i].substr(0, colon);
    r.scale = BitsToFloat(bits);
    if (!(r.scale > 0) || !std::isfinite(r.scale)) {
      return absl::InvalidArgumentError(absl::StrFormat("%s line %d: scale of '%s' is not a positive number", what,
                                                        i + 1, r.name));
    }
    r.threshold = numerics::ThresholdOfScale(r.scale, numerics::kInt8SymmetricMax);
    r.min = r.max = std::numeric_limits<float>::quiet_NaN();
    table.tensors.push_back(r);
  }
  std::sort(table.tensors.begin(), table.tensors.end(),
            [](const TensorRange& a, const TensorRange& b) { return a.name < b.name; });
  return table;
}

std::string ToJson(const CalibrationTable& table) {
  nlohmann::ordered_json j;
  j["format"] = kJsonFormat;
  j["version"] = 1;
  j["method"] = table.method;
  if (table.method == "percentile") j["percentile"] = table.percentile;
  j["samples"] = table.samples;
  j["fingerprint"] = table.fingerprint;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (const TensorRange& r : table.tensors) {
    nlohmann::ordered_json t;
    t["threshold"] = r.threshold;
    t["scale"] = r.scale;
    t["scale_bits"] = absl::StrFormat("%08x", FloatBits(r.scale));
    if (std::isfinite(r.min)) t["min"] = r.min;
    if (std::isfinite(r.max)) t["max"] = r.max;
    if (!r.method.empty() && r.method != table.method) t["method"] = r.method;  // auto's pick, or max for residuals
    if (!r.bounded_by.empty()) t["bounded_by"] = r.bounded_by;
    tensors[r.name] = t;
  }
  j["tensors"] = tensors;
  return j.dump(2) + "\n";
}

namespace {

// Typed reads of an optional JSON field: absent leaves `out` as is; a field of another
// type (or a number beyond float range where a float is wanted) is an error naming it,
// where nlohmann's own getters would throw.
absl::Status ReadString(const nlohmann::json& j, const char* key, std::string* out, const std::string& where) {
  if (!j.contains(key)) return absl::OkStatus();
  if (!j[key].is_string()) return absl::InvalidArgumentError(absl::StrCat(where, ": '", key, "' is not a string"));
  *out = j[key].get<std::string>();
  return absl::OkStatus();
}

template <typename T>  // float or double
absl::Status ReadNumber(const nlohmann::json& j, const char* key, T* out, const std::string& where) {
  if (!j.contains(key)) return absl::OkStatus();
  const double v = j[key].is_number() ? j[key].get<double>() : std::numeric_limits<double>::quiet_NaN();
  if (!std::isfinite(v) || std::abs(v) > std::numeric_limits<T>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": '", key, "' is not a finite number"));
  }
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CalibrationTable> ParseJson(const std::string& text, const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError(absl::StrCat(what, ": not valid JSON"));
  std::string format;
  QFUSE_RETURN_IF_ERROR(ReadString(j, "format", &format, what));
  if (format != kJsonFormat) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a qfuse calibration table (format != ", kJsonFormat, ")"));
  }
  CalibrationTable table;
  QFUSE_RETURN_IF_ERROR(ReadString(j, "method", &table.method, what));
  QFUSE_RETURN_IF_ERROR(ReadString(j, "fingerprint", &table.fingerprint, what));
  QFUSE_RETURN_IF_ERROR(ReadNumber(j, "percentile", &table.percentile, what));
  if (j.contains("samples")) {
    if (!j["samples"].is_number_integer() || j["samples"].get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": 'samples' is not a non-negative integer"));
    }
    table.samples = j["samples"].get<int64_t>();
  }
  if (!j.contains("tensors") || !j["tensors"].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": no 'tensors' object"));
  }
  for (const auto& [name, t] : j["tensors"].items()) {
    TensorRange r;
    r.name = name;
    uint32_t bits = 0;
    if (!t.is_object() || !t.contains("scale_bits") || !t["scale_bits"].is_string() ||
        !absl::SimpleHexAtoi(t["scale_bits"].get<std::string>(), &bits) || !t.contains("threshold")) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": tensor '", name, "' lacks threshold or scale_bits"));
    }
    const std::string where = absl::StrCat(what, ": tensor '", name, "'");
    r.scale = BitsToFloat(bits);  // exact, independent of decimal printing
    QFUSE_RETURN_IF_ERROR(ReadNumber(t, "threshold", &r.threshold, where));
    r.min = r.max = std::numeric_limits<float>::quiet_NaN();
    QFUSE_RETURN_IF_ERROR(ReadNumber(t, "min", &r.min, where));
    QFUSE_RETURN_IF_ERROR(ReadNumber(t, "max", &r.max, where));
    r.method = table.method;
    QFUSE_RETURN_IF_ERROR(ReadString(t, "method", &r.method, where));
    QFUSE_RETURN_IF_ERROR(ReadString(t, "bounded_by", &r.bounded_by, where));
    table.tensors.push_back(r);
  }
  std::sort(table.tensors.begin(), table.tensors.end(),
            [](const TensorRange& a, const TensorRange& b) { return a.name < b.name; });
  return table;
}

absl::Status WriteCalibrationTable(const CalibrationTable& table, const std::string& path) {
  const bool json = absl::EndsWith(absl::AsciiStrToLower(path), ".json");
  return base::WriteFileAtomically(path, json ? ToJson(table) : ToTensorRtCache(table));
}

absl::StatusOr<CalibrationTable> ReadCalibrationTable(const std::string& path, const std::string& expected_fingerprint,
                                                      bool force) {
  QFUSE_ASSIGN_OR_RETURN(std::string text, base::ReadFileToString(path));
  if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(text), "{")) return ParseTensorRtCache(text, path);
  QFUSE_ASSIGN_OR_RETURN(CalibrationTable table, ParseJson(text, path));
  if (!force && table.fingerprint != expected_fingerprint) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": made for graph ", table.fingerprint,
                                                      ", this graph is ", expected_fingerprint,
                                                      " (recalibrate, or force its use)"));
  }
  return table;
}

}  // namespace qfuse::calib
