#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "base/checked_math.h"
#include "base/status_macros.h"

namespace qfuse::data {
namespace {

constexpr uint8_t kIdxUint8 = 0x08;
constexpr uint8_t kIdxFloat32 = 0x0D;
// Largest decompressed payload read per gzread call (its length argument is unsigned int).
constexpr int64_t kReadChunkBytes = int64_t{1} << 24;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFilePtr = std::unique_ptr<gzFile_s, GzCloser>;

const char* IdxTypeName(uint8_t type) {
  switch (type) {
    case 0x08: return "uint8";
    case 0x09: return "int8";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return nullptr;
  }
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// zlib's last error for `f`, without the "<path>: " prefix it adds.
std::string GzErrorMessage(gzFile f, const std::string& path) {
  int errnum = Z_OK;
  const char* message = gzerror(f, &errnum);
  if (errnum == Z_ERRNO) return std::strerror(errno);
  absl::string_view text = message != nullptr ? message : "";
  absl::ConsumePrefix(&text, absl::StrCat(path, ": "));
  return std::string(text);
}

// Appends up to `bytes` decompressed bytes to `out`; stops early only at end of file.
absl::Status ReadUpTo(gzFile f, const std::string& path, int64_t bytes, std::string* out) {
  int64_t done = 0;
  int64_t chunk_limit = int64_t{1} << 16;  // grows to kReadChunkBytes: a short file costs little
  while (done < bytes) {
    const int64_t chunk = std::min(bytes - done, chunk_limit);
    chunk_limit = std::min(2 * chunk_limit, kReadChunkBytes);
    const size_t old_size = out->size();
    out->resize(old_size + chunk);
    const int n = gzread(f, out->data() + old_size, static_cast<unsigned>(chunk));
    if (n < 0) {
      return absl::DataLossError(absl::StrCat(path, ": corrupt gzip data (", GzErrorMessage(f, path), ")"));
    }
    out->resize(old_size + n);
    if (n == 0) break;
    done += n;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::Tensor> ReadIdxFile(const std::string& path, int64_t max_items) {
  GzFilePtr file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  }
  std::string magic;
  QFUSE_RETURN_IF_ERROR(ReadUpTo(file.get(), path, 4, &magic));
  if (magic.size() < 4) {
    return absl::DataLossError(absl::StrCat(path, ": truncated IDX header (", magic.size(), " bytes)"));
  }
  const auto* m = reinterpret_cast<const uint8_t*>(magic.data());
  const char* type_name = IdxTypeName(m[2]);
  if (m[0] != 0 || m[1] != 0 || type_name == nullptr || m[3] == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: not an IDX file: magic 0x%08X (expected 0x0000TTRR: element type TT, rank RR >= 1)", path,
        BigEndian32(m)));
  }
  const uint8_t type = m[2];
  if (type != kIdxUint8 && type != kIdxFloat32) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: IDX element type 0x%02X (%s) is not supported; expected 0x08 (uint8) or 0x0D (float32)", path, type,
        type_name));
  }
  const int rank = m[3];
  std::string header;
  QFUSE_RETURN_IF_ERROR(ReadUpTo(file.get(), path, 4 * rank, &header));
  if (static_cast<int>(header.size()) < 4 * rank) {
    return absl::DataLossError(absl::StrCat(path, ": truncated IDX header (rank ", rank, " needs ", 4 * rank,
                                            " bytes of dims, got ", header.size(), ")"));
  }
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) dims[i] = BigEndian32(reinterpret_cast<const uint8_t*>(header.data()) + 4 * i);
  const int64_t declared_items = dims[0];
  const int64_t element_size = type == kIdxUint8 ? 1 : 4;
  // The declared shape must be a possible tensor (no int64 overflow even with a zero dim);
  // the samples actually read must fit the tensor size cap.
  absl::StatusOr<int64_t> declared = base::CheckedElementCount(dims, path + ": IDX dims");
  if (!declared.ok()) return declared.status();
  if (max_items > 0) dims[0] = std::min(dims[0], max_items);
  absl::StatusOr<int64_t> wanted = base::CheckedByteCount(dims, element_size, path + ": IDX dims");
  if (!wanted.ok()) return wanted.status();
  // One item's bytes, checked on its own: with zero items the check above bounds nothing.
  absl::StatusOr<int64_t> checked_item_bytes = base::CheckedByteCount(
      absl::MakeConstSpan(dims).subspan(rank > 0 ? 1 : 0), element_size, path + ": IDX item");
  if (!checked_item_bytes.ok()) return checked_item_bytes.status();
  const int64_t item_bytes = *checked_item_bytes;
  const int64_t bytes = dims[0] * item_bytes;
  std::string data;
  QFUSE_RETURN_IF_ERROR(ReadUpTo(file.get(), path, bytes, &data));
  if (static_cast<int64_t>(data.size()) < bytes) {
    const int64_t items_read = item_bytes == 0 ? 0 : static_cast<int64_t>(data.size()) / item_bytes;
    int errnum = Z_OK;
    gzerror(file.get(), &errnum);
    return absl::DataLossError(absl::StrCat(path, ": truncated IDX data: header declares ", declared_items,
                                            " items of ", item_bytes, " bytes, file ends after item ", items_read,
                                            " (", data.size(), " of ", bytes, " bytes read",
                                            errnum != Z_OK ? absl::StrCat("; gzip: ", GzErrorMessage(file.get(), path)) : "",
                                            ")"));
  }

  QFUSE_ASSIGN_OR_RETURN(ir::Tensor tensor,
                         ir::Tensor::Create(type == kIdxUint8 ? ir::DataType::kUint8 : ir::DataType::kFloat32, dims,
                                            "IDX data"));
  if (type == kIdxUint8) {
    if (bytes > 0) std::memcpy(tensor.raw_data(), data.data(), bytes);
  } else {
    const auto* src = reinterpret_cast<const uint8_t*>(data.data());
    float* dst = tensor.data<float>();
    for (int64_t i = 0; i < tensor.num_elements(); ++i) {
      const uint32_t bits = BigEndian32(src + 4 * i);
      std::memcpy(&dst[i], &bits, sizeof(float));
    }
  }
  return tensor;
}

absl::StatusOr<std::vector<int64_t>> ReadIdxLabels(const std::string& path) {
  QFUSE_ASSIGN_OR_RETURN(ir::Tensor tensor, ReadIdxFile(path));
  if (tensor.dtype() != ir::DataType::kUint8 || tensor.rank() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected an IDX label file (rank 1, uint8: magic 0x00000801), got ",
                     ir::DataTypeName(tensor.dtype()), ir::DimsToString(tensor.dims())));
  }
  const absl::Span<const uint8_t> values = tensor.values<uint8_t>();
  return std::vector<int64_t>(values.begin(), values.end());
}

}  // namespace qfuse::data
