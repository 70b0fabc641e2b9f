// Private helpers of the nn kernels: work-based chunking for ParallelFor, the
// outer x axis x inner view of a tensor around one axis, and pipelined float sums.
#ifndef QFUSE_RUNTIME_KERNELS_NN_NN_COMMON_H_
#define QFUSE_RUNTIME_KERNELS_NN_NN_COMMON_H_

#include <algorithm>
#include <cstdint>

#include "absl/types/span.h"

namespace qfuse::runtime::kernels::nn_internal {

// Smallest number of items worth handing to one thread when each item costs about
// `work_per_item` elementary operations (keeps tiny tensors on the calling thread).
inline int64_t MinChunk(int64_t work_per_item) {
  constexpr int64_t kMinWorkPerChunk = 1 << 15;
  return std::max<int64_t>(1, kMinWorkPerChunk / std::max<int64_t>(1, work_per_item));
}

// dims viewed as [outer, dims[axis], inner] around `axis` (already normalised).
struct AxisView {
  int64_t outer = 1;
  int64_t axis = 1;
  int64_t inner = 1;
};

inline AxisView ViewAroundAxis(absl::Span<const int64_t> dims, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < axis; ++i) v.outer *= dims[i];
  v.axis = dims[axis];
  for (size_t i = axis + 1; i < dims.size(); ++i) v.inner *= dims[i];
  return v;
}

// Sum of n floats in double, as four independent partial sums so the adds pipeline
// (order of addition: element i goes to partial i % 4, then the partials pairwise).
inline double SumToDouble(const float* x, int64_t n) {
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) acc[j] += x[i + j];
  }
  for (; i < n; ++i) acc[i % 4] += x[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// Sum of (x[i] - mean)^2 over n floats, in double, pipelined like SumToDouble.
inline double SquaredDeviationSum(const float* x, int64_t n, double mean) {
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) {
      const double d = x[i + j] - mean;
      acc[j] += d * d;
    }
  }
  for (; i < n; ++i) {
    const double d = x[i] - mean;
    acc[i % 4] += d * d;
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

}  // namespace qfuse::runtime::kernels::nn_internal

#endif  // QFUSE_RUNTIME_KERNELS_NN_NN_COMMON_H_
