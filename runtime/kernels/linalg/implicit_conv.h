// The implicit-GEMM path of float Conv (ConvPath::kImplicitGemm, AVX-512 only): 1-2 spatial
// dims at unit stride, convolved without an im2col matrix.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_IMPLICIT_CONV_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_IMPLICIT_CONV_H_

#include "runtime/kernels/linalg/conv_plan.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::linalg {

// y = conv(x, w) + bias for a plan whose path is kImplicitGemm, split into blocks of output
// rows of each (image, group) across the pool.
void RunImplicitGemmConv(const ConvPlan& plan, const ThreadPool& pool, const ConvBuffers& buffers);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_IMPLICIT_CONV_H_
