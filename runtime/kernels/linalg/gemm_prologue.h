// The part of C = alpha * op(A) * op(B) + beta * C that every SGEMM path does first:
// scaling C by beta (or clearing it for beta = 0, so C is never read then).
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_GEMM_PROLOGUE_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_GEMM_PROLOGUE_H_

#include <algorithm>
#include <cstdint>

namespace qfuse::runtime::kernels::linalg {

// Applies beta to the m x n block of C (row stride ldc) when the product will not do it:
// always when there is no product (k == 0 or alpha == 0); otherwise only for beta other
// than 0 and 1 (the kernels store for beta = 0 and accumulate for beta = 1).
inline void ApplyBetaBeforeProduct(int64_t m, int64_t n, float beta, bool no_product, float* c, int64_t ldc) {
  if (beta == 1.0f || (beta == 0.0f && !no_product)) return;
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.0f) {
      std::fill(row, row + n, 0.0f);
    } else {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_GEMM_PROLOGUE_H_
