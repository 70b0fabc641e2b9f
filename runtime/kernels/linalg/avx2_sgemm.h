// A packed single-precision GEMM with an AVX2/FMA micro-kernel, compiled through
// function target attributes so the rest of the build keeps the baseline ISA.
// Callers must check Avx2SgemmAvailable() first.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_AVX2_SGEMM_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_AVX2_SGEMM_H_

#include <cstdint>

namespace qfuse::runtime::kernels::linalg {

// True when the CPU and OS support AVX2 and FMA (checked once).
bool Avx2SgemmAvailable();

// Same contract as Gemm in eigen_gemm.h (row-major, beta == 0 overwrites C).
// Results may differ from Eigen's in rounding (fused multiply-add, other sum order).
void Avx2Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_AVX2_SGEMM_H_
