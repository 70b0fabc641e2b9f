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

// The float32 sum of n floats in the order onnxruntime's reductions add them (ReduceSum /
// ReduceMean over trailing axes: Eigen's vectorised sum as its x86-64 build compiles it, packets
// of 4; matched value for value against onnxruntime 1.30, docs/zoo.md). `offset` is the run's
// element offset in a 16-byte-aligned buffer: packets start at the first aligned element.
// Two assumptions: onnxruntime's Eigen is compiled for SSE (4-float packets; an AVX build
// would pair 8-float packets and differ), and its buffers are 16-byte aligned (its allocator
// aligns to 64; an input fed as an offset view would shift the packets).
//   two accumulators p0, p1 take packets [s, s+4), [s+4, s+8), then alternate 8 elements a step;
//   p0 += p1, then one odd packet; the lanes as (l0 + l2) + (l1 + l3); then the elements before
//   s, then those after the last packet. Fewer than 4 elements past s: left to right.
inline float OrtFloatSum(const float* x, int64_t n, int64_t offset) {
  constexpr int64_t kPacket = 4;
  const int64_t start = std::min<int64_t>(n, (kPacket - offset % kPacket) % kPacket);
  const int64_t size2 = (n - start) / (2 * kPacket) * (2 * kPacket);
  const int64_t size1 = (n - start) / kPacket * kPacket;
  if (size1 == 0) {
    float r = n > 0 ? x[0] : 0.f;
    for (int64_t i = 1; i < n; ++i) r += x[i];
    return r;
  }
  float p0[kPacket], p1[kPacket];
  for (int j = 0; j < kPacket; ++j) p0[j] = x[start + j];
  if (size1 > kPacket) {
    for (int j = 0; j < kPacket; ++j) p1[j] = x[start + kPacket + j];
    for (int64_t i = start + 2 * kPacket; i < start + size2; i += 2 * kPacket) {
      for (int j = 0; j < kPacket; ++j) {
        p0[j] += x[i + j];
        p1[j] += x[i + kPacket + j];
      }
    }
    for (int j = 0; j < kPacket; ++j) p0[j] += p1[j];
    if (size1 > size2) {
      for (int j = 0; j < kPacket; ++j) p0[j] += x[start + size2 + j];
    }
  }
  float r = (p0[0] + p0[2]) + (p0[1] + p0[3]);
  for (int64_t i = 0; i < start; ++i) r += x[i];
  for (int64_t i = start + size1; i < n; ++i) r += x[i];
  return r;
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
