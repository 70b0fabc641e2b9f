// The depthwise path of float Conv (ConvPath::kDepthwise, weights [M, 1, k...]: one input
// channel per group): a direct loop per output channel, AVX-512 or AVX2/FMA when allowed.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_DEPTHWISE_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_DEPTHWISE_H_

#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/linalg/conv_plan.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::linalg {

// out[col] = bias + sum_tap w[tap] * image[pos(col, tap)] for one channel; taps in the
// padding are skipped (no w * 0 term).
void DepthwiseChannel(const ConvGeometry& g, const float* image, const float* w, float bias, float* out);

// y = conv(x, w) + bias for a plan whose path is kDepthwise: every (image, output channel)
// by DepthwiseChannel, across the pool.
void RunDepthwiseConv(const ConvPlan& plan, const ThreadPool& pool, const ConvBuffers& buffers);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_DEPTHWISE_H_
