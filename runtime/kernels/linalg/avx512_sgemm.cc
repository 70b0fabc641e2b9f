#include "runtime/kernels/linalg/avx512_sgemm.h"
#include "runtime/cpu_isa.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/linalg/gemm_prologue.h"

#define QFUSE_AVX512_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))

namespace qfuse::runtime::kernels::linalg {
namespace {

// Micro-tile of C held in registers: kMr rows x kNr columns (16 ZMM accumulators).
constexpr int64_t kMr = 8;
constexpr int64_t kNr = 32;
// Cache blocking: a kMc x kKc block of packed A stays in L2 while the micro-kernel
// sweeps kKc x kNr panels of B (L1) across it; kNc bounds the packed-B buffer.
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 96;
constexpr int64_t kNc = 1024;

// Packs op(B)[pc:pc+kc, jc:jc+nc] (B transposed in memory) as column panels of kNr:
// panel p holds rows k = 0..kc-1 of kNr consecutive columns, zero-padded past nc.
void PackBTransposed(const float* b, int64_t ldb, int64_t pc, int64_t kc, int64_t jc, int64_t nc, float* out) {
  for (int64_t j0 = 0; j0 < nc; j0 += kNr, out += kc * kNr) {
    const int64_t cols = std::min(kNr, nc - j0);
    for (int64_t j = 0; j < cols; ++j) {
      const float* src = b + (jc + j0 + j) * ldb + pc;
      for (int64_t kk = 0; kk < kc; ++kk) out[kk * kNr + j] = src[kk];
    }
    for (int64_t kk = 0; kk < kc; ++kk) {
      for (int64_t j = cols; j < kNr; ++j) out[kk * kNr + j] = 0.0f;
    }
  }
}

// out[j * 8 + r] = alpha * src[r * ld + j] for r, j < 8 (an 8x8 transpose).
QFUSE_AVX512_TARGET inline void Transpose8x8(const float* src, int64_t ld, float alpha, float* out) {
  const __m256 scale = _mm256_set1_ps(alpha);
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_mul_ps(_mm256_loadu_ps(src + i * ld), scale);
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(out + 0, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(out + 32, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(out + 40, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(out + 48, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(out + 56, _mm256_permute2f128_ps(u3, u7, 0x31));
}

// Packs alpha * op(A)[ic:ic+mc, pc:pc+kc] as row strips of kMr, zero-padded.
QFUSE_AVX512_TARGET void PackA(bool trans_a, const float* a, int64_t lda, int64_t ic, int64_t mc, int64_t pc,
                               int64_t kc, float alpha, float* out) {
  static_assert(kMr == 8, "the transpose below packs 8-row strips");
  for (int64_t i0 = 0; i0 < mc; i0 += kMr) {
    const int64_t rows = std::min(kMr, mc - i0);
    if (!trans_a && rows == kMr) {
      const float* src = a + (ic + i0) * lda + pc;
      int64_t kk = 0;
      for (; kk + 8 <= kc; kk += 8) Transpose8x8(src + kk, lda, alpha, out + kk * kMr);
      for (; kk < kc; ++kk) {
        for (int64_t r = 0; r < kMr; ++r) out[kk * kMr + r] = alpha * src[r * lda + kk];
      }
    } else if (!trans_a) {
      for (int64_t r = 0; r < rows; ++r) {
        const float* src = a + (ic + i0 + r) * lda + pc;
        for (int64_t kk = 0; kk < kc; ++kk) out[kk * kMr + r] = alpha * src[kk];
      }
      for (int64_t r = rows; r < kMr; ++r) {
        for (int64_t kk = 0; kk < kc; ++kk) out[kk * kMr + r] = 0.0f;
      }
    } else {
      for (int64_t kk = 0; kk < kc; ++kk) {
        const float* src = a + (pc + kk) * lda + ic + i0;
        int64_t r = 0;
        for (; r < rows; ++r) out[kk * kMr + r] = alpha * src[r];
        for (; r < kMr; ++r) out[kk * kMr + r] = 0.0f;
      }
    }
    out += kc * kMr;
  }
}

// C[0:mr, 0:nr] (+)= packed A strip * B panel, whose row kk (kNv * 16 floats, of
// which the lanes in m0/m1 are read) is at bp + kk * b_stride (a packed panel, or B
// itself when it is row-major). Masked loads never touch memory outside the mask.
// kNv == 1 is the half-width tile for a last panel of at most 16 columns.
// With kIndirect, row kk is instead at bp + b_offsets[kk] (b_stride unused).
template <int kNv, bool kMasked, bool kIndirect>
QFUSE_AVX512_TARGET void MicroKernel(int64_t kc, const float* ap, const float* bp, int64_t b_stride,
                                     const int64_t* b_offsets, float* c, int64_t ldc, int64_t mr, __mmask16 m0,
                                     __mmask16 m1, bool accumulate, const float* bias) {
  // Named accumulators (an array may be spilled to the stack every iteration).
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  __m512 c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  for (int64_t kk = 0; kk < kc; ++kk, ap += kMr) {
    const float* brow;
    if constexpr (kIndirect) {
      brow = bp + b_offsets[kk];
    } else {
      brow = bp;
      bp += b_stride;
    }
    __m512 b0, b1 = _mm512_setzero_ps();
    if constexpr (kMasked) {
      b0 = _mm512_maskz_loadu_ps(m0, brow);
      if constexpr (kNv == 2) b1 = _mm512_maskz_loadu_ps(m1, brow + 16);
    } else {
      b0 = _mm512_loadu_ps(brow);
      if constexpr (kNv == 2) b1 = _mm512_loadu_ps(brow + 16);
    }
#define QFUSE_ROW(r)                                 \
  {                                                  \
    const __m512 av = _mm512_set1_ps(ap[r]);         \
    c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);      \
    if constexpr (kNv == 2) {                        \
      c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);    \
    }                                                \
  }
    QFUSE_ROW(0)
    QFUSE_ROW(1)
    QFUSE_ROW(2)
    QFUSE_ROW(3)
    QFUSE_ROW(4)
    QFUSE_ROW(5)
    QFUSE_ROW(6)
    QFUSE_ROW(7)
#undef QFUSE_ROW
  }
  const __m512 acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                              {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  for (int64_t r = 0; r < mr; ++r) {
    float* row = c + r * ldc;
    __m512 v0 = acc[r][0], v1 = acc[r][1];
    if (bias != nullptr) {  // only when not accumulating
      const __m512 bv = _mm512_set1_ps(bias[r]);
      v0 = _mm512_add_ps(v0, bv);
      v1 = _mm512_add_ps(v1, bv);
    }
    if constexpr (kMasked) {
      if (accumulate) {
        v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, row));
        if constexpr (kNv == 2) v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, row + 16));
      }
      _mm512_mask_storeu_ps(row, m0, v0);
      if constexpr (kNv == 2) _mm512_mask_storeu_ps(row + 16, m1, v1);
    } else {
      if (accumulate) {
        v0 = _mm512_add_ps(v0, _mm512_loadu_ps(row));
        if constexpr (kNv == 2) v1 = _mm512_add_ps(v1, _mm512_loadu_ps(row + 16));
      }
      _mm512_storeu_ps(row, v0);
      if constexpr (kNv == 2) _mm512_storeu_ps(row + 16, v1);
    }
  }
}

__mmask16 LaneMask(int64_t lanes) {
  if (lanes <= 0) return 0;
  if (lanes >= 16) return 0xFFFF;
  return static_cast<__mmask16>((1u << lanes) - 1u);
}

}  // namespace

bool Avx512SgemmAvailable() {
  return IsaAllowed(Isa::kAvx512);
}

namespace {

template <bool kIndirect>
QFUSE_AVX512_TARGET void RunKernel(int64_t kc, const float* ap, const float* bp, int64_t b_stride,
                                   const int64_t* b_offsets, float* c, int64_t ldc, int64_t mr, int64_t nr,
                                   bool accumulate, const float* bias) {
  if (nr == kNr) {
    MicroKernel<2, false, kIndirect>(kc, ap, bp, b_stride, b_offsets, c, ldc, mr, 0xFFFF, 0xFFFF, accumulate, bias);
  } else if (nr == 16) {
    MicroKernel<1, false, kIndirect>(kc, ap, bp, b_stride, b_offsets, c, ldc, mr, 0xFFFF, 0, accumulate, bias);
  } else if (nr < 16) {
    MicroKernel<1, true, kIndirect>(kc, ap, bp, b_stride, b_offsets, c, ldc, mr, LaneMask(nr), 0, accumulate, bias);
  } else {
    MicroKernel<2, true, kIndirect>(kc, ap, bp, b_stride, b_offsets, c, ldc, mr, 0xFFFF, LaneMask(nr - 16),
                                    accumulate, bias);
  }
}

// Avx512Sgemm, or with b_offsets non-null (and !trans_b) the row-table form of
// Avx512SgemmRowTable; a non-null row_bias (with beta == 0) is added to each row of C.
void Driver(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
            const float* b, int64_t ldb, const int64_t* b_offsets, float beta, const float* row_bias, float* c,
            int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const bool no_product = k <= 0 || alpha == 0.0f;
  if (row_bias != nullptr && no_product) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, row_bias[i]);
    return;
  }
  ApplyBetaBeforeProduct(m, n, beta, no_product, c, ldc);
  if (no_product) return;
  thread_local std::vector<float> a_pack, b_pack;
  const int64_t mc_max = std::min(kMc, (m + kMr - 1) / kMr * kMr);
  a_pack.resize(std::min(kKc, k) * mc_max);
  if (trans_b) b_pack.resize(std::min(kKc, k) * std::min(kNc, (n + kNr - 1) / kNr * kNr));
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nc = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = std::min(kKc, k - pc);
      // Row-major B is read in place (the ragged last panel through masked loads);
      // transposed B is packed into panels.
      if (trans_b) PackBTransposed(b, ldb, pc, kc, jc, nc, b_pack.data());
      const bool accumulate = beta != 0.0f || pc > 0;
      const float* bias = accumulate ? nullptr : row_bias;
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = std::min(kMc, m - ic);
        PackA(trans_a, a, lda, ic, mc, pc, kc, alpha, a_pack.data());
        for (int64_t j0 = 0; j0 < nc; j0 += kNr) {
          const int64_t nr = std::min(kNr, nc - j0);
          float* c_tile = c + ic * ldc + jc + j0;
          for (int64_t i0 = 0; i0 < mc; i0 += kMr) {
            const float* ap = a_pack.data() + (i0 / kMr) * kc * kMr;
            const int64_t mr = std::min(kMr, mc - i0);
            float* ct = c_tile + i0 * ldc;
            const float* bias_rows = bias == nullptr ? nullptr : bias + ic + i0;
            if (b_offsets != nullptr) {
              RunKernel<true>(kc, ap, b + jc + j0, 0, b_offsets + pc, ct, ldc, mr, nr, accumulate, bias_rows);
            } else if (trans_b) {
              RunKernel<false>(kc, ap, b_pack.data() + (j0 / kNr) * kc * kNr, kNr, nullptr, ct, ldc, mr, nr,
                               accumulate, bias_rows);
            } else {
              RunKernel<false>(kc, ap, b + pc * ldb + jc + j0, ldb, nullptr, ct, ldc, mr, nr, accumulate, bias_rows);
            }
          }
        }
      }
    }
  }
}

}  // namespace

void Avx512Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  Driver(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, nullptr, beta, nullptr, c, ldc);
}

void Avx512SgemmRowBias(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                        const float* row_bias, float* c, int64_t ldc) {
  Driver(false, false, m, n, k, 1.0f, a, lda, b, ldb, nullptr, 0.0f, row_bias, c, ldc);
}

void Avx512SgemmRowTable(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                         const int64_t* b_offsets, float* c, int64_t ldc) {
  Driver(false, false, m, n, k, 1.0f, a, lda, b, 0, b_offsets, 0.0f, nullptr, c, ldc);
}

}  // namespace qfuse::runtime::kernels::linalg
