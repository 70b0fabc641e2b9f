// Gemm (see eigen_gemm.h) split across the runtime's thread pool by rows of C, or by
// columns when C has few rows; small products run on the calling thread.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_PARALLEL_GEMM_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_PARALLEL_GEMM_H_

#include <algorithm>
#include <cstdint>

#include "runtime/kernels/linalg/eigen_gemm.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::linalg {

// Products below this many multiply-adds are not worth a thread hand-off.
inline constexpr int64_t kParallelGemmMinMacs = 1 << 18;

template <typename T>
void ParallelGemm(const ThreadPool* pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const int threads = pool == nullptr ? 1 : pool->num_threads();
  if (threads <= 1 || m * n * k < kParallelGemmMinMacs) {
    Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  constexpr int64_t kBlock = 16;  // keep chunks a multiple of the kernel's register tile
  if (m >= n || m >= threads * kBlock * 2) {
    const int64_t blocks = (m + kBlock - 1) / kBlock;
    pool->ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
      const int64_t r0 = begin * kBlock, r1 = std::min(m, end * kBlock);
      const T* a_part = trans_a ? a + r0 : a + r0 * lda;
      Gemm(trans_a, trans_b, r1 - r0, n, k, alpha, a_part, lda, b, ldb, beta, c + r0 * ldc, ldc);
    });
  } else {
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    pool->ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
      const int64_t c0 = begin * kBlock, c1 = std::min(n, end * kBlock);
      const T* b_part = trans_b ? b + c0 * ldb : b + c0;
      Gemm(trans_a, trans_b, m, c1 - c0, k, alpha, a, lda, b_part, ldb, beta, c + c0, ldc);
    });
  }
}

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_PARALLEL_GEMM_H_
