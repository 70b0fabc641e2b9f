#include "data/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "base/checked_math.h"
#include "base/status_macros.h"

namespace qfuse::data {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicSize = 6;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// The text after `'key':` in a header dict like "{'descr': '<f4', 'fortran_order': False, ...}".
absl::StatusOr<absl::string_view> ValueOf(absl::string_view dict, absl::string_view key, const std::string& path) {
  for (const char quote : {'\'', '"'}) {
    const std::string quoted = absl::StrCat(std::string(1, quote), key, std::string(1, quote));
    const size_t at = dict.find(quoted);
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = absl::StripLeadingAsciiWhitespace(dict.substr(at + quoted.size()));
    if (!absl::ConsumePrefix(&rest, ":")) break;
    return absl::StripLeadingAsciiWhitespace(rest);
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": .npy header has no '", key, "' entry: ", dict));
}

absl::StatusOr<NpyHeader> ParseHeader(absl::string_view dict, const std::string& path) {
  NpyHeader header;
  absl::StatusOr<absl::string_view> descr = ValueOf(dict, "descr", path);
  if (!descr.ok()) return descr.status();
  if (descr->empty() || ((*descr)[0] != '\'' && (*descr)[0] != '"')) {
    return absl::UnimplementedError(
        absl::StrCat(path, ": structured .npy dtypes are not supported; expected '<f4' (float32) or '|u1' (uint8)"));
  }
  const size_t close = descr->find((*descr)[0], 1);
  if (close == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": malformed .npy header: ", dict));
  }
  header.descr = std::string(descr->substr(1, close - 1));

  absl::StatusOr<absl::string_view> fortran = ValueOf(dict, "fortran_order", path);
  if (!fortran.ok()) return fortran.status();
  if (absl::StartsWith(*fortran, "True")) {
    header.fortran_order = true;
  } else if (!absl::StartsWith(*fortran, "False")) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": malformed .npy header: ", dict));
  }

  absl::StatusOr<absl::string_view> shape = ValueOf(dict, "shape", path);
  if (!shape.ok()) return shape.status();
  const size_t end = shape->find(')');
  if (shape->empty() || (*shape)[0] != '(' || end == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": malformed .npy shape in header: ", dict));
  }
  for (absl::string_view part : absl::StrSplit(shape->substr(1, end - 1), ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;  // "(5,)" and "()"
    absl::ConsumeSuffix(&part, "L");  // Python 2 longs
    int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": malformed .npy shape in header: ", dict));
    }
    header.shape.push_back(dim);
  }
  return header;
}

uint32_t LittleEndian(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

absl::StatusOr<ir::Tensor> ReadNpyFile(const std::string& path, int64_t max_items) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  }
  uint8_t preamble[12];
  const size_t got = std::fread(preamble, 1, 10, file.get());
  if (got < 10 || std::memcmp(preamble, kNpyMagic, kNpyMagicSize) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a .npy file (no \\x93NUMPY magic)"));
  }
  const int major = preamble[6];
  if (major < 1 || major > 3) {
    return absl::UnimplementedError(absl::StrCat(path, ": .npy format version ", major, ".", int{preamble[7]},
                                                 " is not supported (expected 1.0 to 3.0)"));
  }
  uint32_t header_len = LittleEndian(preamble + 8, 2);
  if (major >= 2) {
    if (std::fread(preamble + 10, 1, 2, file.get()) != 2) {
      return absl::DataLossError(absl::StrCat(path, ": truncated .npy header"));
    }
    header_len = LittleEndian(preamble + 8, 4);
  }
  if (header_len > (1u << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": implausible .npy header length ", header_len));
  }
  std::string dict(header_len, '\0');
  if (std::fread(dict.data(), 1, header_len, file.get()) != header_len) {
    return absl::DataLossError(absl::StrCat(path, ": truncated .npy header"));
  }
  absl::StatusOr<NpyHeader> header = ParseHeader(absl::StripAsciiWhitespace(dict), path);
  if (!header.ok()) return header.status();

  ir::DataType dtype = ir::DataType::kUndefined;
  if (header->descr == "<f4") {
    dtype = ir::DataType::kFloat32;
  } else if (header->descr == "|u1" || header->descr == "<u1" || header->descr == "u1") {
    dtype = ir::DataType::kUint8;
  } else {
    return absl::UnimplementedError(absl::StrCat(path, ": .npy dtype '", header->descr,
                                                 "' is not supported; expected '<f4' (float32) or '|u1' (uint8)",
                                                 header->descr == "<f8" ? "; save with .astype(np.float32)" : ""));
  }
  if (header->fortran_order) {
    return absl::UnimplementedError(absl::StrCat(
        path, ": Fortran-order .npy arrays are not supported; save with np.ascontiguousarray (C order)"));
  }
  std::vector<int64_t> dims = header->shape;
  if (dims.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": .npy array is a scalar; its first dim must be the sample dim"));
  }
  // The whole declared array must be in the file, even when fewer samples are read: a
  // header that claims more rows than the file holds is a damaged file.
  absl::StatusOr<int64_t> declared_bytes =
      base::CheckedByteCount(dims, static_cast<int64_t>(ir::ElementSize(dtype)), path + ": .npy array");
  if (!declared_bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("implausible .npy header: ", declared_bytes.status().message()));
  }
  const int64_t item_bytes = dims[0] == 0 ? 0 : *declared_bytes / dims[0];
  if (max_items > 0) dims[0] = std::min(dims[0], max_items);
  const int64_t data_offset = std::ftell(file.get());
  if (std::fseek(file.get(), 0, SEEK_END) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": cannot seek (", std::strerror(errno), ")"));
  }
  const int64_t available = std::ftell(file.get()) - data_offset;
  const int64_t bytes = dims[0] * item_bytes;  // <= *declared_bytes
  if (available < *declared_bytes) {
    return absl::DataLossError(absl::StrCat(path, ": truncated .npy data: header declares shape ",
                                            ir::DimsToString(header->shape), " (", *declared_bytes,
                                            " bytes), file holds ", available, " bytes of data"));
  }
  std::fseek(file.get(), data_offset, SEEK_SET);
  QFUSE_ASSIGN_OR_RETURN(ir::Tensor tensor, ir::Tensor::CreateUninitialized(dtype, dims, "npy array"));
  if (bytes > 0 && std::fread(tensor.raw_data(), 1, bytes, file.get()) != static_cast<size_t>(bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": read error (", std::strerror(errno), ")"));
  }
  return tensor;
}

}  // namespace qfuse::data
