// Scalar reference Conv and ConvTranspose (1-3 spatial dims, groups, strides, dilations, explicit
// pads): plain loops accumulating in double (float) or int64 (integer), the oracle the optimised
// convolutions (im2col + GEMM, the implicit row-table GEMM, depthwise, oneDNN, the integer
// kernels) are tested against. Slow on purpose: no blocking, no SIMD, no threads.
#ifndef QFUSE_RUNTIME_REFERENCE_CONV_H_
#define QFUSE_RUNTIME_REFERENCE_CONV_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/tensor.h"

namespace qfuse::runtime::reference {

// Resolved attributes (no auto_pad): per spatial dim, empty meaning all 1 (strides, dilations)
// or all 0 (pads [begin..., end...], output_padding).
struct ConvParams {
  int64_t group = 1;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;
  std::vector<int64_t> output_padding;  // ConvTranspose only
};

// Conv on FLOAT tensors: x [N, C, spatial...], w [M, C / group, kernel...], bias [M] or null;
// y[n][m][o] = bias[m] + sum over the group's channels c and taps t of x[n][c][o * s - pb + t * d]
// * w[m][c][t] (taps in the padding skipped), in double, rounded to float once. Output size per
// dim: (in + pb + pe - ((k - 1) * d + 1)) / s + 1.
absl::StatusOr<ir::Tensor> Conv(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor* bias,
                                const ConvParams& params);

// ConvTranspose on FLOAT tensors: x [N, C, spatial...], w [C, M / group, kernel...], bias [M] or
// null; every x[n][c][i] * w[c][m][t] adds into y[n][m][i * s - pb + t * d] when inside the output,
// in double, rounded to float once. Output size per dim:
// s * (in - 1) + output_padding + (k - 1) * d + 1 - pb - pe.
absl::StatusOr<ir::Tensor> ConvTranspose(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor* bias,
                                         const ConvParams& params);

// The int32 accumulators of an integer Conv (ConvInteger, QLinearConv and the integer units before
// requantization, bias not included): sum (x - x_zero_point) * (w - w_zero_point[m]) over the
// same taps as Conv, in int64, as an INT64 tensor [N, M, out...]. x and w are INT8 or UINT8;
// w_zero_points holds one value or one per output channel.
absl::StatusOr<ir::Tensor> ConvIntegerAccumulators(const ir::Tensor& x, int32_t x_zero_point, const ir::Tensor& w,
                                                   absl::Span<const int32_t> w_zero_points,
                                                   const ConvParams& params);

}  // namespace qfuse::runtime::reference

#endif  // QFUSE_RUNTIME_REFERENCE_CONV_H_
