// Scalar reference GEMM and MatMul: plain loops accumulating in double (float) or int64
// (integer), the oracle the optimised GEMMs (Eigen, the AVX2 / AVX-512 SGEMMs, the int8 GEMM,
// oneDNN) are tested against. Slow on purpose: no blocking, no SIMD, no threads.
#ifndef QFUSE_RUNTIME_REFERENCE_GEMM_H_
#define QFUSE_RUNTIME_REFERENCE_GEMM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/tensor.h"

namespace qfuse::runtime::reference {

// Row-major op(A) [m, k], op(B) [k, n] and C [m, n] with leading dimensions (elements between
// rows as stored: A is [k, lda] when trans_a, else [m, lda]; B likewise).
struct GemmParams {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  double alpha = 1;
  double beta = 0;
};

// out[i * ldc + j] = alpha * sum_p op(A)[i][p] * op(B)[p][j] + beta * c[i * ldc + j] for i < m,
// j < n, every product and sum in double, p in increasing order; other elements of `out` are
// not written. beta == 0 never reads `c` (which may then be null or hold NaN).
void Gemm(const GemmParams& params, const float* a, const float* b, const float* c, double* out);

// ONNX Gemm on FLOAT tensors: alpha * op(A) * op(B) + beta * C with A, B 2-D and C (optional)
// unidirectionally broadcast to [m, n]; computed by Gemm above and rounded to float once.
struct GemmAttributes {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1;
  float beta = 1;
};
absl::StatusOr<ir::Tensor> GemmOp(const ir::Tensor& a, const ir::Tensor& b, const ir::Tensor* c,
                                  const GemmAttributes& attributes);

// ONNX / numpy MatMul on FLOAT tensors of rank >= 2: the batch dims (all but the last two)
// broadcast, each [m, k] x [k, n] product in double, rounded to float once.
absl::StatusOr<ir::Tensor> MatMul(const ir::Tensor& a, const ir::Tensor& b);

// Integer GEMM accumulators, as the integer kernels compute them before requantization:
// out[i * ldc + j] = sum_p (A[i][p] - a_zp(i)) * (B[p][j] - b_zp(j)) in int64, with A [m, lda]
// and B [k, ldb] row-major (no transposes). A zero-point span holds one value for every row
// (column), or one per row of A (column of B).
struct IntegerGemmParams {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
};
template <typename A, typename B>
void IntegerGemm(const IntegerGemmParams& p, const A* a, absl::Span<const int32_t> a_zero_points, const B* b,
                 absl::Span<const int32_t> b_zero_points, int64_t* out) {
  for (int64_t i = 0; i < p.m; ++i) {
    const int64_t a_zp = a_zero_points.size() == 1 ? a_zero_points[0] : a_zero_points[i];
    for (int64_t j = 0; j < p.n; ++j) {
      const int64_t b_zp = b_zero_points.size() == 1 ? b_zero_points[0] : b_zero_points[j];
      int64_t acc = 0;
      for (int64_t q = 0; q < p.k; ++q) acc += (int64_t{a[i * p.lda + q]} - a_zp) * (int64_t{b[q * p.ldb + j]} - b_zp);
      out[i * p.ldc + j] = acc;
    }
  }
}

}  // namespace qfuse::runtime::reference

#endif  // QFUSE_RUNTIME_REFERENCE_GEMM_H_
