// The packed AVX-512 and AVX2 SGEMM kernels against the reference GEMM (double precision) and
// against each other, on sizes that are not multiples of their register tiles or cache
// blocks, with every transpose combination, alpha and beta.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/kernels/linalg/avx2_sgemm.h"
#include "runtime/kernels/linalg/avx512_sgemm.h"
#include "runtime/reference/gemm.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

std::vector<float> Random(int64_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(size);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Case {
  int64_t m, n, k;
};

// Leading dimensions are padded past the logical width so strides are exercised.
struct Problem {
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  std::vector<float> a, b, c;

  Problem(bool ta_in, bool tb_in, Case s, float alpha_in, float beta_in, uint32_t seed)
      : ta(ta_in), tb(tb_in), m(s.m), n(s.n), k(s.k), alpha(alpha_in), beta(beta_in) {
    lda = (ta ? m : k) + 3;
    ldb = (tb ? k : n) + 5;
    ldc = n + 7;
    a = Random((ta ? k : m) * lda, seed);
    b = Random((tb ? n : k) * ldb, seed + 1);
    c = Random(m * ldc, seed + 2);
    if (beta == 0.0f) {
      for (float& x : c) x = std::nanf("");  // beta == 0 must not read C
    }
  }

  // The reference GEMM (runtime/reference/gemm.h) in double, and the same over |A|, |B|, |C|
  // (the sum of |terms|) for a rounding bound.
  void Reference(std::vector<double>& out, std::vector<double>& magnitude) const {
    reference::GemmParams params{ta, tb, m, n, k, lda, ldb, ldc, alpha, beta};
    out.assign(m * ldc, 0.0);
    reference::Gemm(params, a.data(), b.data(), c.data(), out.data());
    params.alpha = std::abs(alpha);
    params.beta = std::abs(beta);
    magnitude.assign(m * ldc, 0.0);
    reference::Gemm(params, Abs(a).data(), Abs(b).data(), Abs(c).data(), magnitude.data());
  }

  static std::vector<float> Abs(std::vector<float> v) {
    for (float& x : v) x = std::abs(x);
    return v;
  }
};

using Kernel = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                        float, float*, int64_t);

std::vector<float> RunKernel(Kernel kernel, const Problem& p) {
  std::vector<float> c = p.c;
  kernel(p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(), p.ldb, p.beta, c.data(), p.ldc);
  return c;
}

const Case kCases[] = {
    {1, 1, 1},     {7, 5, 3},     {8, 32, 1},     {9, 33, 17},   {13, 47, 29},  {17, 31, 257},
    {16, 784, 144}, {24, 196, 96}, {97, 70, 300}, {105, 1030, 19}, {3, 1100, 513}, {64, 10, 512},
};

void CheckAgainstNaive(Kernel kernel) {
  uint32_t seed = 1;
  for (const Case& s : kCases) {
    for (int t = 0; t < 4; ++t) {
      for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, 1.0f}, {-1.5f, 0.25f}, {0.0f, 2.0f}}) {
        Problem p(t & 1, t & 2, s, alpha, beta, seed++);
        std::vector<double> expected, magnitude;
        p.Reference(expected, magnitude);
        const std::vector<float> c = RunKernel(kernel, p);
        for (int64_t i = 0; i < p.m; ++i) {
          for (int64_t j = 0; j < p.ldc; ++j) {
            const int64_t idx = i * p.ldc + j;
            if (j >= p.n) {  // padding past n untouched (NaN compares unequal to itself)
              ASSERT_TRUE(c[idx] == p.c[idx] || (std::isnan(c[idx]) && std::isnan(p.c[idx])));
              continue;
            }
            const double tol = 4 * (p.k + 2) * 6e-8 * magnitude[idx] + 1e-30;
            ASSERT_NEAR(c[idx], expected[idx], tol)
                << "m=" << p.m << " n=" << p.n << " k=" << p.k << " ta=" << p.ta << " tb=" << p.tb
                << " alpha=" << p.alpha << " beta=" << p.beta << " at (" << i << ", " << j << ")";
          }
        }
      }
    }
  }
}

TEST(SgemmKernelTest, Avx512MatchesNaiveLoop) {
  if (!Avx512SgemmAvailable()) GTEST_SKIP() << "CPU lacks AVX-512";
  CheckAgainstNaive(&Avx512Sgemm);
}

TEST(SgemmKernelTest, Avx2MatchesNaiveLoop) {
  if (!Avx2SgemmAvailable()) GTEST_SKIP() << "CPU lacks AVX2/FMA";
  CheckAgainstNaive(&Avx2Sgemm);
}

TEST(SgemmKernelTest, Avx512MatchesAvx2) {
  if (!Avx512SgemmAvailable() || !Avx2SgemmAvailable()) GTEST_SKIP() << "CPU lacks AVX-512 or AVX2";
  uint32_t seed = 100;
  for (const Case& s : kCases) {
    for (int t = 0; t < 4; ++t) {
      Problem p(t & 1, t & 2, s, 0.75f, 0.5f, seed++);
      const std::vector<float> c512 = RunKernel(&Avx512Sgemm, p);
      const std::vector<float> c256 = RunKernel(&Avx2Sgemm, p);
      for (int64_t i = 0; i < p.m * p.ldc; ++i) {
        ASSERT_NEAR(c512[i], c256[i], 1e-5f * (1.0f + std::abs(c256[i])) * std::sqrt(static_cast<float>(p.k)))
            << "m=" << p.m << " n=" << p.n << " k=" << p.k << " ta=" << p.ta << " tb=" << p.tb << " at " << i;
      }
    }
  }
}

TEST(SgemmKernelTest, Avx512RowBiasAndRowTable) {
  if (!Avx512SgemmAvailable()) GTEST_SKIP() << "CPU lacks AVX-512";
  uint32_t seed = 500;
  for (const Case& s : kCases) {
    // Row bias: C = A * B + bias[i], with C's NaNs never read.
    Problem p(false, false, s, 1.0f, 0.0f, seed++);
    const std::vector<float> bias = Random(p.m, seed++);
    std::vector<double> expected, magnitude;
    p.Reference(expected, magnitude);
    std::vector<float> c = p.c;
    Avx512SgemmRowBias(p.m, p.n, p.k, p.a.data(), p.lda, p.b.data(), p.ldb, bias.data(), c.data(), p.ldc);
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        const int64_t idx = i * p.ldc + j;
        ASSERT_NEAR(c[idx], expected[idx] + bias[i], 4 * (p.k + 2) * 6e-8 * (magnitude[idx] + 1.0))
            << "bias m=" << p.m << " n=" << p.n << " k=" << p.k << " at (" << i << ", " << j << ")";
      }
    }
    // Row table: row kk of B at b + offsets[kk] (here a permuted, overlapping view of b).
    std::vector<int64_t> offsets(p.k);
    for (int64_t kk = 0; kk < p.k; ++kk) offsets[kk] = ((kk * 7) % p.k) * p.ldb + (kk % 3);
    std::vector<float> table_c(p.m * p.ldc, std::nanf(""));
    Avx512SgemmRowTable(p.m, p.n, p.k, p.a.data(), p.lda, p.b.data(), offsets.data(), table_c.data(), p.ldc);
    Problem gathered = p;  // B's rows gathered by the table: the reference reads them in place
    gathered.ldb = p.n;
    gathered.b.assign(p.k * p.n, 0.0f);
    for (int64_t kk = 0; kk < p.k; ++kk) {
      std::copy(p.b.begin() + offsets[kk], p.b.begin() + offsets[kk] + p.n, gathered.b.begin() + kk * p.n);
    }
    std::vector<double> sum, mag;
    gathered.Reference(sum, mag);
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        ASSERT_NEAR(table_c[i * p.ldc + j], sum[i * p.ldc + j], 4 * (p.k + 2) * 6e-8 * mag[i * p.ldc + j] + 1e-30)
            << "table m=" << p.m << " n=" << p.n << " k=" << p.k << " at (" << i << ", " << j << ")";
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::kernels::linalg
