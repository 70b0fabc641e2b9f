// Scalar reference MaxPool / AveragePool (1-3 spatial dims, strides, dilations, explicit pads,
// floor output size): a plain loop over every window, the oracle the optimised pools (the
// hand-written kernels and oneDNN) are tested against.
#ifndef QFUSE_RUNTIME_REFERENCE_POOL_H_
#define QFUSE_RUNTIME_REFERENCE_POOL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace qfuse::runtime::reference {

// Resolved attributes (no auto_pad, no ceil_mode): per spatial dim, empty meaning all 1 (strides,
// dilations) or all 0 (pads [begin..., end...]).
struct PoolParams {
  enum class Kind { kMax, kAverage } kind = Kind::kMax;
  std::vector<int64_t> kernel_shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;
  bool count_include_pad = false;  // kAverage: divide by every tap, else by the taps inside x
};

// Pool of a FLOAT x [N, C, spatial...] to [N, C, out...], out = (in + pb + pe - ((k - 1) * d + 1))
// / s + 1 per dim: the max of the window's taps inside x, or their sum (in double) divided by
// their count (or by the kernel size with count_include_pad), rounded to float once.
absl::StatusOr<ir::Tensor> Pool(const ir::Tensor& x, const PoolParams& params);

}  // namespace qfuse::runtime::reference

#endif  // QFUSE_RUNTIME_REFERENCE_POOL_H_
