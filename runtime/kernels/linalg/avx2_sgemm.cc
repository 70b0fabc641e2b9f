#include "runtime/kernels/linalg/avx2_sgemm.h"
#include "runtime/cpu_isa.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/linalg/gemm_prologue.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

// Micro-tile of C held in registers: kMr rows x kNr columns (12 accumulators).
constexpr int64_t kMr = 6;
constexpr int64_t kNr = 16;
// Cache blocking: a kKc x kNc panel of B (L2) and a kMc x kKc block of A.
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 72;
constexpr int64_t kNc = 512;

// Packs op(B)[pc:pc+kc, jc:jc+nc] as column panels of kNr: panel p holds
// rows k = 0..kc-1 of kNr consecutive columns, zero-padded past nc.
void PackB(bool trans_b, const float* b, int64_t ldb, int64_t pc, int64_t kc, int64_t jc, int64_t nc, float* out) {
  for (int64_t j0 = 0; j0 < nc; j0 += kNr) {
    const int64_t cols = std::min(kNr, nc - j0);
    for (int64_t kk = 0; kk < kc; ++kk, out += kNr) {
      if (!trans_b) {
        const float* src = b + (pc + kk) * ldb + jc + j0;
        int64_t j = 0;
        for (; j < cols; ++j) out[j] = src[j];
        for (; j < kNr; ++j) out[j] = 0.0f;
      } else {
        const float* src = b + (jc + j0) * ldb + pc + kk;
        int64_t j = 0;
        for (; j < cols; ++j) out[j] = src[j * ldb];
        for (; j < kNr; ++j) out[j] = 0.0f;
      }
    }
  }
}

// Packs alpha * op(A)[ic:ic+mc, pc:pc+kc] as row strips of kMr, zero-padded.
void PackA(bool trans_a, const float* a, int64_t lda, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float alpha,
           float* out) {
  for (int64_t i0 = 0; i0 < mc; i0 += kMr) {
    const int64_t rows = std::min(kMr, mc - i0);
    for (int64_t kk = 0; kk < kc; ++kk, out += kMr) {
      int64_t r = 0;
      if (!trans_a) {
        const float* src = a + (ic + i0) * lda + pc + kk;
        for (; r < rows; ++r) out[r] = alpha * src[r * lda];
      } else {
        const float* src = a + (pc + kk) * lda + ic + i0;
        for (; r < rows; ++r) out[r] = alpha * src[r];
      }
      for (; r < kMr; ++r) out[r] = 0.0f;
    }
  }
}

// C[0:mr, 0:nr] (+)= packed A strip * B panel, whose row kk (kNr floats) is at
// bp + kk * b_stride (a packed panel, or B itself when it is row-major).
__attribute__((target("avx2,fma"))) void MicroKernel(int64_t kc, const float* ap, const float* bp, int64_t b_stride,
                                                     float* c, int64_t ldc, int64_t mr, int64_t nr, bool accumulate) {
  // Named accumulators (an array would be spilled to the stack every iteration).
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t kk = 0; kk < kc; ++kk, ap += kMr, bp += b_stride) {
    const __m256 b0 = _mm256_loadu_ps(bp);
    const __m256 b1 = _mm256_loadu_ps(bp + 8);
    __m256 av = _mm256_broadcast_ss(ap + 0);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(ap + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(ap + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(ap + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(ap + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(ap + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
  }
  const __m256 acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  if (mr == kMr && nr == kNr) {
    for (int r = 0; r < kMr; ++r) {
      float* row = c + r * ldc;
      __m256 v0 = acc[r][0], v1 = acc[r][1];
      if (accumulate) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(row));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(row + 8));
      }
      _mm256_storeu_ps(row, v0);
      _mm256_storeu_ps(row + 8, v1);
    }
    return;
  }
  alignas(32) float tile[kMr][kNr];
  for (int r = 0; r < kMr; ++r) {
    _mm256_store_ps(tile[r], acc[r][0]);
    _mm256_store_ps(tile[r] + 8, acc[r][1]);
  }
  for (int64_t r = 0; r < mr; ++r) {
    float* row = c + r * ldc;
    if (accumulate) {
      for (int64_t j = 0; j < nr; ++j) row[j] += tile[r][j];
    } else {
      for (int64_t j = 0; j < nr; ++j) row[j] = tile[r][j];
    }
  }
}

}  // namespace

bool Avx2SgemmAvailable() {
  return IsaAllowed(Isa::kAvx2);
}

void Avx2Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const bool no_product = k <= 0 || alpha == 0.0f;
  ApplyBetaBeforeProduct(m, n, beta, no_product, c, ldc);
  if (no_product) return;
  thread_local std::vector<float> a_pack, b_pack;
  const int64_t nc_max = std::min(kNc, (n + kNr - 1) / kNr * kNr);
  const int64_t mc_max = std::min(kMc, (m + kMr - 1) / kMr * kMr);
  b_pack.resize(std::min(kKc, k) * nc_max);
  a_pack.resize(std::min(kKc, k) * mc_max);
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nc = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = std::min(kKc, k - pc);
      // Row-major B is read in place, full panels straight from memory; only
      // transposed B and the ragged last panel are packed.
      const int64_t direct_cols = trans_b ? 0 : nc / kNr * kNr;
      if (direct_cols < nc) {
        PackB(trans_b, b, ldb, pc, kc, jc + direct_cols, nc - direct_cols, b_pack.data() + direct_cols * kc);
      }
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = std::min(kMc, m - ic);
        PackA(trans_a, a, lda, ic, mc, pc, kc, alpha, a_pack.data());
        for (int64_t j0 = 0; j0 < nc; j0 += kNr) {
          const bool direct = j0 < direct_cols;
          const float* bp = direct ? b + pc * ldb + jc + j0 : b_pack.data() + (j0 / kNr) * kc * kNr;
          const int64_t b_stride = direct ? ldb : kNr;
          for (int64_t i0 = 0; i0 < mc; i0 += kMr) {
            MicroKernel(kc, a_pack.data() + (i0 / kMr) * kc * kMr, bp, b_stride, c + (ic + i0) * ldc + jc + j0, ldc,
                        std::min(kMr, mc - i0), std::min(kNr, nc - j0), /*accumulate=*/beta != 0.0f || pc > 0);
          }
        }
      }
    }
  }
}

}  // namespace qfuse::runtime::kernels::linalg
