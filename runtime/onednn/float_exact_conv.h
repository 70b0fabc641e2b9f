// Exact int32 accumulators of a small-K integer convolution from oneDNN's float32 kernels.
// A float32 holds every integer of magnitude up to 2^24 exactly, so when
// K x max|x - zp| x max|w| < 2^24 (K = input channels per group x kernel taps) every product
// (x - zp) * w and every partial sum, in whatever order, is an exact integer: the float32
// convolution of (x - zp) with w is sum (x - zp) * w, exactly. The integer kernel uses it for
// sources dense in values outside the split source's window (source_split.h), the first layers
// (K = 9, 27 or 147 for 1 or 3 input channels), which ran on qfuse's tiles at a few G
// multiply-adds per second.
#ifndef QFUSE_RUNTIME_ONEDNN_FLOAT_EXACT_CONV_H_
#define QFUSE_RUNTIME_ONEDNN_FLOAT_EXACT_CONV_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "ir/tensor.h"
#include "runtime/kernels/linalg/conv_attrs.h"

namespace qfuse::runtime::onednn {

// Whether the float32 sums of a conv with these int8 weights (zero point 0) [O, C/g, kh, kw]
// are exact for a uint8 source whose largest |x - zp| is max_abs_x.
bool FloatSumsAreExact(const ir::Tensor& weights, int32_t max_abs_x);

class FloatExactConv {
 public:
  // `weights`: INT8 [O, C/g, kh, kw], zero point 0, FloatSumsAreExact for the sources given.
  FloatExactConv(kernels::linalg::ConvAttrs attrs, ir::Tensor weights);
  ~FloatExactConv();

  // acc (channels-last [N, OH, OW, O] int32) = sum (x - zero_point) * w over `x_dims`
  // ([N, C, H, W]) images of channels-last uint8 bytes x ^ flip. Runs on oneDNN's OpenMP
  // threads.
  absl::Status Accumulate(const uint8_t* x, uint8_t flip, int32_t zero_point, const std::vector<int64_t>& x_dims,
                          int32_t* acc);

 private:
  struct Primitive;
  absl::StatusOr<const Primitive*> Find(const std::vector<int64_t>& x_dims);

  const kernels::linalg::ConvAttrs attrs_;
  const ir::Tensor weights_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<Primitive>> cache_;
};

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_FLOAT_EXACT_CONV_H_
