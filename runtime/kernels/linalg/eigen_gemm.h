// Row-major GEMM for the linalg kernels: for float the packed AVX-512 kernel of
// avx512_sgemm.h or the AVX2/FMA kernel of avx2_sgemm.h when the CPU has them, Eigen
// otherwise (eigen_gemm.cc is the only translation unit of the package that includes
// Eigen, which dominates build time).
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_EIGEN_GEMM_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_EIGEN_GEMM_H_

#include <cstdint>

namespace qfuse::runtime::kernels::linalg {

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, all row-major with leading
// dimensions lda/ldb/ldc (elements between consecutive rows as stored). op(A) is A,
// or A^T when trans_a (A then stored as [K,M]); likewise B. beta == 0 overwrites C
// without reading it (NaNs in C do not propagate). Single-threaded; float results may
// differ between CPUs in the last bits (FMA and summation order).
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_EIGEN_GEMM_H_
