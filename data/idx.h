// Readers for IDX files, the MNIST / Fashion-MNIST container: a big-endian header (magic
// 0x0000TTRR: element type TT, rank RR, then RR uint32 dims) followed by row-major data.
// Files may be gzip-compressed or plain (zlib's gzread passes plain files through).
#ifndef QFUSE_DATA_IDX_H_
#define QFUSE_DATA_IDX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace qfuse::data {

// Reads the first min(max_items, dims[0]) items (max_items 0: all) of an IDX file with
// uint8 (type 0x08) or float32 (0x0D) elements into a UINT8 / FLOAT tensor of dims
// [items, dims[1], ...]. Only the bytes of those items are decompressed. Errors (bad magic,
// unsupported element type, corrupt gzip stream, truncated data) name the file.
absl::StatusOr<ir::Tensor> ReadIdxFile(const std::string& path, int64_t max_items = 0);

// Reads an IDX label file (rank 1, uint8: magic 0x00000801, gzip or plain), e.g.
// t10k-labels-idx1-ubyte.gz, for accuracy evaluation.
absl::StatusOr<std::vector<int64_t>> ReadIdxLabels(const std::string& path);

}  // namespace qfuse::data

#endif  // QFUSE_DATA_IDX_H_
