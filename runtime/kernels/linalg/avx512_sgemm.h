// A packed single-precision GEMM with an AVX-512 micro-kernel (8 x 32 register tile of
// ZMM accumulators), compiled through function target attributes so the rest of the
// build keeps the baseline ISA. Callers must check Avx512SgemmAvailable() first.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_AVX512_SGEMM_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_AVX512_SGEMM_H_

#include <cstdint>

namespace qfuse::runtime::kernels::linalg {

// True when the CPU and OS support AVX-512F/VL/BW/DQ and FMA (checked once).
bool Avx512SgemmAvailable();

// Same contract as Gemm in eigen_gemm.h (row-major, beta == 0 overwrites C).
// Results may differ from Eigen's in rounding (fused multiply-add, other sum order).
void Avx512Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// C[m, n] = A[m, k] * B[k, n] + row_bias[i] (added to every element of row i; null for
// none), all row-major; C is overwritten.
void Avx512SgemmRowBias(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                        const float* row_bias, float* c, int64_t ldc);

// C[m, n] = A[m, k] * B, A row-major (lda), where row kk of B is the n floats at
// b + b_offsets[kk] (an implicit im2col matrix: rows are shifted views of one image).
// C is overwritten; the n floats past each row's offset must be readable.
void Avx512SgemmRowTable(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                         const int64_t* b_offsets, float* c, int64_t ldc);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_AVX512_SGEMM_H_
