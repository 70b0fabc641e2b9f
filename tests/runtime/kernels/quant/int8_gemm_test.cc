#include "runtime/kernels/quant/int8_gemm.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {
namespace {

// C[m][n] = sum_k (A[m][k] - zp(m)) * B[k][n] in int64 (then checked to fit int32).
template <typename A>
std::vector<int32_t> Naive(const std::vector<A>& a, int64_t m, int64_t k, const std::vector<int8_t>& b, int64_t n,
                           const std::vector<int32_t>& zps) {
  std::vector<int32_t> c(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int64_t kk = 0; kk < k; ++kk) acc += (int64_t{a[i * k + kk]} - zps[i]) * b[kk * n + j];
      EXPECT_EQ(acc, static_cast<int32_t>(acc));
      c[i * n + j] = static_cast<int32_t>(acc);
    }
  }
  return c;
}

std::vector<Int8GemmIsa> AvailableIsas() {
  std::vector<Int8GemmIsa> isas;
  for (Int8GemmIsa isa : {Int8GemmIsa::kScalar, Int8GemmIsa::kAvx2, Int8GemmIsa::kAvx512Vnni}) {
    if (Int8GemmIsaAvailable(isa)) isas.push_back(isa);
  }
  return isas;
}

// Values drawn mostly from the extremes (-128, 127, 0, 255) and otherwise uniform.
template <typename T>
T Draw(std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 3), any(std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max());
  switch (pick(rng)) {
    case 0: return std::numeric_limits<T>::lowest();
    case 1: return std::numeric_limits<T>::max();
    default: return static_cast<T>(any(rng));
  }
}

template <typename A>
void CheckAllPaths(int64_t m, int64_t n, int64_t k, bool per_row_zp, const ThreadPool* pool, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "M=" << m << " N=" << n << " K=" << k << (per_row_zp ? " per-row zp" : ""));
  std::mt19937 rng(seed);
  std::vector<A> a(m * k);
  for (A& v : a) v = Draw<A>(rng);
  std::vector<int8_t> b(k * n);
  for (int8_t& v : b) v = Draw<int8_t>(rng);
  std::vector<int32_t> zps(m, Draw<A>(rng));
  if (per_row_zp) {
    for (int32_t& z : zps) z = Draw<A>(rng);
  }
  const std::vector<int32_t> expected = Naive(a, m, k, b, n, zps);
  const PackedInt8Weights packed = PackInt8Weights(b.data(), k, n, /*stride_k=*/n, /*stride_n=*/1);
  for (Int8GemmIsa isa : AvailableIsas()) {
    SCOPED_TRACE(Int8GemmIsaName(isa));
    const int64_t ldc = n + 3;  // padding must stay untouched
    std::vector<int32_t> c(m * ldc, -7);
    Int8GemmArgs args;
    args.m = m;
    args.a = a.data();
    args.a_signed = std::is_signed_v<A>;
    args.lda = k;
    args.a_zero_point = zps[0];
    args.a_row_zero_points = per_row_zp ? zps.data() : nullptr;
    args.c = c.data();
    args.ldc = ldc;
    args.pool = pool;
    args.isa = isa;
    Int8Gemm(args, packed);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) ASSERT_EQ(c[i * ldc + j], expected[i * n + j]) << "C[" << i << "][" << j << "]";
      for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], -7);
    }
  }
}

TEST(Int8GemmTest, AllPathsMatchNaiveUint8) {
  uint32_t seed = 1;
  for (int64_t k : {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 65, 144, 147}) {
    for (int64_t n : {1, 7, 8, 9, 16, 17, 33, 96}) {
      for (int64_t m : {1, 3, 4, 5, 8, 9, 13}) CheckAllPaths<uint8_t>(m, n, k, false, nullptr, seed++);
    }
  }
}

TEST(Int8GemmTest, AllPathsMatchNaiveInt8) {
  uint32_t seed = 100;
  for (int64_t k : {1, 3, 4, 9, 31, 32, 144}) {
    for (int64_t n : {1, 8, 15, 16, 48}) {
      for (int64_t m : {1, 2, 7, 8, 17}) CheckAllPaths<int8_t>(m, n, k, false, nullptr, seed++);
    }
  }
}

TEST(Int8GemmTest, PerRowZeroPoints) {
  CheckAllPaths<uint8_t>(19, 21, 37, true, nullptr, 5);
  CheckAllPaths<int8_t>(19, 21, 37, true, nullptr, 6);
}

TEST(Int8GemmTest, ExtremeValuesAtTheInt32Limit) {
  // K = 65793 products of (255 - 0) * -128 is -2147450880: just inside int32.
  const int64_t m = 3, n = 17, k = 65793;
  std::vector<uint8_t> a(m * k, 255);
  std::vector<int8_t> b(k * n, -128);
  const PackedInt8Weights packed = PackInt8Weights(b.data(), k, n, n, 1);
  for (Int8GemmIsa isa : AvailableIsas()) {
    std::vector<int32_t> c(m * n);
    Int8GemmArgs args;
    args.m = m;
    args.a = a.data();
    args.lda = k;
    args.c = c.data();
    args.ldc = n;
    args.isa = isa;
    Int8Gemm(args, packed);
    for (int32_t v : c) ASSERT_EQ(v, int64_t{-128} * 255 * k) << Int8GemmIsaName(isa);
  }
}

TEST(Int8GemmTest, ThreadedMatchesSingleThreaded) {
  ThreadPool pool(2);
  CheckAllPaths<uint8_t>(1000, 40, 144, false, &pool, 9);
  CheckAllPaths<int8_t>(333, 96, 72, true, &pool, 10);
}

TEST(Int8GemmTest, TransposedPackingAndEmptyK) {
  // Weights stored [N, K] (conv layout).
  const int64_t m = 5, n = 6, k = 11;
  std::mt19937 rng(3);
  std::vector<uint8_t> a(m * k);
  for (auto& v : a) v = Draw<uint8_t>(rng);
  std::vector<int8_t> w(n * k), b(k * n);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t kk = 0; kk < k; ++kk) b[kk * n + j] = w[j * k + kk] = Draw<int8_t>(rng);
  }
  const std::vector<int32_t> expected = Naive(a, m, k, b, n, std::vector<int32_t>(m, 3));
  const PackedInt8Weights packed = PackInt8Weights(w.data(), k, n, /*stride_k=*/1, /*stride_n=*/k);
  std::vector<int32_t> c(m * n);
  Int8GemmArgs args;
  args.m = m;
  args.a = a.data();
  args.lda = k;
  args.a_zero_point = 3;
  args.c = c.data();
  args.ldc = n;
  Int8Gemm(args, packed);
  EXPECT_EQ(c, expected);

  const PackedInt8Weights empty = PackInt8Weights(nullptr, 0, n, n, 1);
  args.lda = 0;
  Int8Gemm(args, empty);
  EXPECT_EQ(c, std::vector<int32_t>(m * n, 0));
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant
