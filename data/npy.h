// Reader for NumPy .npy files (format versions 1.0-3.0) holding float32 or uint8 arrays in
// C order; the first dim is the sample dim.
#ifndef QFUSE_DATA_NPY_H_
#define QFUSE_DATA_NPY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace qfuse::data {

// Reads the first min(max_items, shape[0]) items (max_items 0: all) of a .npy file whose
// dtype is '<f4' (FLOAT) or '|u1' / '<u1' (UINT8) into a tensor of dims [items, shape[1], ...].
// Fortran-order arrays, other dtypes (e.g. '<f8': save with .astype(np.float32)), big-endian
// data, rank-0 arrays and truncated files are errors naming the file. Assumes a little-endian host.
absl::StatusOr<ir::Tensor> ReadNpyFile(const std::string& path, int64_t max_items = 0);

}  // namespace qfuse::data

#endif  // QFUSE_DATA_NPY_H_
