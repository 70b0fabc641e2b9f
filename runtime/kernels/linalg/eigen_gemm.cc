#include "runtime/kernels/linalg/eigen_gemm.h"

#include <eigen3/Eigen/Core>

#include "runtime/kernels/linalg/avx2_sgemm.h"
#include "runtime/kernels/linalg/avx512_sgemm.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

template <typename T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using MutMap = Eigen::Map<RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <typename T, typename MatA, typename MatB>
void Product(const MatA& a, const MatB& b, T alpha, T beta, MutMap<T>& c) {
  if (beta == T(0)) {
    if (alpha == T(1)) {
      c.noalias() = a * b;
    } else {
      c.noalias() = alpha * (a * b);
    }
    return;
  }
  if (beta != T(1)) c *= beta;
  if (alpha == T(1)) {
    c.noalias() += a * b;
  } else {
    c.noalias() += alpha * (a * b);
  }
}

template <typename T>
void GemmImpl(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
              const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  MutMap<T> cm(c, m, n, Eigen::OuterStride<>(ldc));
  if (k <= 0) {
    if (beta == T(0)) {
      cm.setZero();
    } else {
      cm *= beta;
    }
    return;
  }
  ConstMap<T> am(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
  ConstMap<T> bm(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
  if (!trans_a && !trans_b) {
    Product<T>(am, bm, alpha, beta, cm);
  } else if (trans_a && !trans_b) {
    Product<T>(am.transpose(), bm, alpha, beta, cm);
  } else if (!trans_a && trans_b) {
    Product<T>(am, bm.transpose(), alpha, beta, cm);
  } else {
    Product<T>(am.transpose(), bm.transpose(), alpha, beta, cm);
  }
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (Avx512SgemmAvailable()) {
    Avx512Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (Avx2SgemmAvailable()) {
    Avx2Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  GemmImpl<float>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  GemmImpl<double>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace qfuse::runtime::kernels::linalg
