// A 2-D MaxPool on channels-last [N, H, W, C] INT8 / UINT8 bytes (the integer units' layout):
// each output byte is the maximum of its window's bytes inside the image (padding takes no
// part, as ONNX's MaxPool), vectorised over channels with vpmaxub / vpmaxsb (AVX-512BW, AVX2)
// and scalar code below that. A maximum is exact, so every path gives the same bytes as
// oneDNN's pooling and the hand-written NCHW kernel.
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_NHWC_MAX_POOL_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_NHWC_MAX_POOL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {

struct NhwcMaxPoolShape {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t pad_top = 0, pad_left = 0;  // the end paddings follow from the output size
  int64_t oh = 0, ow = 0;             // output
};

// Whether every window of `s` holds at least one input pixel (the kernel refuses others).
bool EveryWindowTouchesTheImage(const NhwcMaxPoolShape& s);

// y[n, oy, ox, c] = max over the window's input pixels of x. InvalidArgument for a shape with
// a window outside the image or non-positive sizes. `pool` may be null (one thread).
absl::Status NhwcMaxPool(const NhwcMaxPoolShape& s, bool is_signed, const uint8_t* x, uint8_t* y,
                         const ThreadPool* pool);

}  // namespace qfuse::runtime::kernels::quant

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_NHWC_MAX_POOL_H_
