#include "runtime/kernels/quant/int8_gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/reference/gemm.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {
namespace {

// C[m][n] = sum_k (A[m][k] - zp(m)) * B[k][n] by the reference integer GEMM
// (runtime/reference/gemm.h), each checked to fit int32; A has row stride lda.
template <typename A>
std::vector<int32_t> Naive(const std::vector<A>& a, int64_t m, int64_t k, const std::vector<int8_t>& b, int64_t n,
                           const std::vector<int32_t>& zps, int64_t lda) {
  std::vector<int64_t> acc(m * n);
  reference::IntegerGemm({m, n, k, lda, n, n}, a.data(), zps, b.data(), {0}, acc.data());
  std::vector<int32_t> c;
  for (int64_t v : acc) {
    EXPECT_EQ(v, static_cast<int32_t>(v));
    c.push_back(static_cast<int32_t>(v));
  }
  return c;
}

template <typename A>
std::vector<int32_t> Naive(const std::vector<A>& a, int64_t m, int64_t k, const std::vector<int8_t>& b, int64_t n,
                           const std::vector<int32_t>& zps) {
  return Naive(a, m, k, b, n, zps, k);
}

std::vector<Int8GemmIsa> AvailableIsas() {
  std::vector<Int8GemmIsa> isas;
  for (Int8GemmIsa isa : {Int8GemmIsa::kScalar, Int8GemmIsa::kAvx2, Int8GemmIsa::kAvxVnni, Int8GemmIsa::kAvx512Vnni}) {
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

// C = (A - zp) * B through `isa` with strides lda and ldc; the C padding must stay untouched.
template <typename A>
std::vector<int32_t> RunGemm(const std::vector<A>& a, int64_t m, int64_t lda, const std::vector<int32_t>& zps,
                             bool per_row_zp, const PackedInt8Weights& packed, int64_t ldc, Int8GemmIsa isa,
                             const ThreadPool* pool = nullptr) {
  constexpr int32_t kUntouched = -7;
  std::vector<int32_t> c(m * ldc, kUntouched);
  Int8GemmArgs args;
  args.m = m;
  args.a = a.data();
  args.a_signed = std::is_signed_v<A>;
  args.lda = lda;
  args.a_zero_point = zps[0];
  args.a_row_zero_points = per_row_zp ? zps.data() : nullptr;
  args.c = c.data();
  args.ldc = ldc;
  args.pool = pool;
  args.isa = isa;
  Int8Gemm(args, packed);
  std::vector<int32_t> out(m * packed.n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < packed.n; ++j) out[i * packed.n + j] = c[i * ldc + j];
    for (int64_t j = packed.n; j < ldc; ++j) EXPECT_EQ(c[i * ldc + j], kUntouched) << "C[" << i << "][" << j << "]";
  }
  return out;
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
    const int64_t ldc = n + 3;  // padding must stay untouched (RunGemm checks it)
    const std::vector<int32_t> c = RunGemm(a, m, k, zps, per_row_zp, packed, ldc, isa, pool);
    for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(c[i], expected[i]) << "C[" << i / n << "][" << i % n << "]";
  }
}

TEST(Int8GemmTest, AllPathsMatchNaiveUint8) {
  uint32_t seed = 1;
  for (int64_t k : {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 65, 144, 147}) {
    for (int64_t n : {1, 7, 8, 9, 16, 17, 33, 96}) {
      // Every row count of the VNNI tile (12 rows) and the AVX2 tiles, and more than one tile.
      for (int64_t m : {1, 3, 4, 5, 8, 9, 11, 12, 13, 25}) CheckAllPaths<uint8_t>(m, n, k, false, nullptr, seed++);
    }
  }
}

TEST(Int8GemmTest, AllPathsMatchNaiveInt8) {
  uint32_t seed = 100;
  for (int64_t k : {1, 3, 4, 9, 31, 32, 144}) {
    for (int64_t n : {1, 8, 15, 16, 48, 65}) {
      for (int64_t m : {1, 2, 7, 8, 12, 17}) CheckAllPaths<int8_t>(m, n, k, false, nullptr, seed++);
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

// ---- 7-bit weights (|b| <= 64): the AVX2 maddubs path.

// A weight in [-64, 64], mostly one of the ends.
int8_t DrawSevenBit(std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 3), any(-kInt8GemmMaddubsMaxAbsWeight, kInt8GemmMaddubsMaxAbsWeight);
  switch (pick(rng)) {
    case 0: return -kInt8GemmMaddubsMaxAbsWeight;
    case 1: return kInt8GemmMaddubsMaxAbsWeight;
    default: return static_cast<int8_t>(any(rng));
  }
}

// The SIMD paths this CPU allows, each to be compared with kScalar and an int64 reference.
std::vector<Int8GemmIsa> SimdIsas() {
  std::vector<Int8GemmIsa> isas;
  for (Int8GemmIsa isa : {Int8GemmIsa::kAvx2, Int8GemmIsa::kAvxVnni, Int8GemmIsa::kAvx512Vnni}) {
    if (Int8GemmIsaAvailable(isa)) isas.push_back(isa);
  }
  return isas;
}

// Element-for-element equality with the first mismatch named.
void ExpectSame(const std::vector<int32_t>& got, const std::vector<int32_t>& want, int64_t n, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << what << ": C[" << i / n << "][" << i % n << "]";
  }
}

// B with |b| <= 64 (both ends present), A from the extremes of its type, zero points from
// A's range, lda = K + lda_pad and ldc > N: every SIMD path equals kScalar and the int64
// reference. With lda_pad 0 the last row ends where A's allocation does (ASan catches a read
// past it); otherwise the padding holds values that must not be read.
template <typename A>
void CheckSevenBit(int64_t m, int64_t n, int64_t k, int64_t lda_pad, bool per_row_zp, const ThreadPool* pool,
                   uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "M=" << m << " N=" << n << " K=" << k << " lda=K+" << lda_pad
                                  << (per_row_zp ? " per-row zp" : ""));
  std::mt19937 rng(seed);
  const int64_t lda = k + lda_pad, ldc = n + 3;
  std::vector<A> a(m * lda);
  for (A& v : a) v = Draw<A>(rng);  // the padding past K too: it must not be read
  std::vector<int8_t> b(k * n);
  for (int8_t& v : b) v = DrawSevenBit(rng);
  b.front() = -kInt8GemmMaddubsMaxAbsWeight;
  b.back() = kInt8GemmMaddubsMaxAbsWeight;
  std::vector<int32_t> zps(m, Draw<A>(rng));
  if (per_row_zp) {
    for (int32_t& z : zps) z = Draw<A>(rng);
  }
  const std::vector<int32_t> expected = Naive(a, m, k, b, n, zps, lda);
  const PackedInt8Weights packed = PackInt8Weights(b.data(), k, n, /*stride_k=*/n, /*stride_n=*/1);
  ASSERT_TRUE(packed.fits_maddubs);
  const std::vector<int32_t> scalar = RunGemm(a, m, lda, zps, per_row_zp, packed, ldc, Int8GemmIsa::kScalar);
  ExpectSame(scalar, expected, n, "scalar vs int64 reference");
  for (Int8GemmIsa isa : SimdIsas()) {
    SCOPED_TRACE(Int8GemmIsaName(isa));
    const std::vector<int32_t> c = RunGemm(a, m, lda, zps, per_row_zp, packed, ldc, isa, pool);
    ExpectSame(c, expected, n, "vs int64 reference");
    ExpectSame(c, scalar, n, "vs scalar");
  }
}

// The centred-weights view of b (rows of stride_k) with one zero point or one per column.
template <typename T>
CenteredWeights<T> Centered(const std::vector<T>& b, int64_t k, int64_t n, int64_t stride_k,
                            const std::vector<int32_t>& zero_points) {
  CenteredWeights<T> w;
  w.b = b.data();
  w.k = k;
  w.n = n;
  w.stride_k = stride_k;
  w.zero_points = zero_points.data();
  w.zero_point_per_column = zero_points.size() > 1;
  return w;
}

// PackCenteredInt8Weights against PackInt8Weights of the centred values: every field, for
// uint8 B with one zero point and int8 B with one per column, rows with a stride, shapes with
// K and N tails; nullopt (and the true max |centred|) once one value leaves [-128, 127].
template <typename T>
void CheckCenteredPacking(int64_t k, int64_t n, bool per_column, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "K=" << k << " N=" << n << (std::is_signed_v<T> ? " int8" : " uint8"));
  std::mt19937 rng(seed);
  const int64_t stride_k = n + 5;
  std::vector<int32_t> zps(per_column ? n : 1);
  for (int32_t& z : zps) {
    z = std::is_signed_v<T> ? static_cast<int32_t>(rng() % 9) - 4 : 120 + static_cast<int32_t>(rng() % 16);
  }
  std::vector<T> b(k * stride_k, 0);
  std::vector<int8_t> centred(k * n);
  int64_t max_abs = 0;
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = 0; j < n; ++j) {
      const int32_t zp = zps[per_column ? j : 0];
      const int32_t v = static_cast<int32_t>(rng() % 256) - 128;  // the centred value, in [-128, 127]
      const int32_t raw = std::clamp(v + zp, std::max<int32_t>(std::numeric_limits<T>::lowest(), zp - 128),
                                     std::min<int32_t>(std::numeric_limits<T>::max(), zp + 127));
      b[kk * stride_k + j] = static_cast<T>(raw);
      centred[kk * n + j] = static_cast<int8_t>(raw - zp);
      max_abs = std::max<int64_t>(max_abs, std::abs(raw - zp));
    }
  }
  const PackedInt8Weights want = PackInt8Weights(centred.data(), k, n, n, 1);
  CenteredWeights<T> w = Centered(b, k, n, stride_k, zps);
  for (bool with_wide : {true, false}) {
    int64_t got_max = -1;
    w.with_wide = with_wide;
    const std::optional<PackedInt8Weights> got = PackCenteredInt8Weights(w, &got_max);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got_max, max_abs);
    EXPECT_EQ(got->k_groups, want.k_groups);
    EXPECT_EQ(got->panels, want.panels);
    EXPECT_EQ(got->data, want.data);
    EXPECT_EQ(got->col_sums, want.col_sums);
    EXPECT_EQ(got->fits_maddubs, want.fits_maddubs);
    EXPECT_EQ(got->wide, with_wide ? want.wide : std::vector<int16_t>{});
  }
  if constexpr (!std::is_signed_v<T>) {  // a 0 below a zero point above 128 centres below -128
    if (!per_column && zps[0] > 128) {
      std::vector<T> out = b;
      out[0] = 0;
      w.b = out.data();
      int64_t got_max = -1;
      EXPECT_FALSE(PackCenteredInt8Weights(w, &got_max).has_value());
      EXPECT_EQ(got_max, zps[0]);
    }
  }
}

TEST(Int8GemmTest, CenteredPackingEqualsPackingCentredValues) {
  uint32_t seed = 40;
  for (int64_t k : {1, 3, 4, 5, 64, 65}) {
    for (int64_t n : {1, 15, 16, 17, 65}) {
      for (bool per_column : {false, true}) {
        CheckCenteredPacking<uint8_t>(k, n, per_column, seed++);
        CheckCenteredPacking<int8_t>(k, n, per_column, seed++);
      }
    }
  }
}

// A B packed without the int16 copy runs the scalar rows on the AVX2 path: the same C.
TEST(Int8GemmTest, AvxTwoPathWithoutWideCopyMatchesNaive) {
  std::mt19937 rng(77);
  const int64_t m = 9, k = 37, n = 21;
  std::vector<uint8_t> a(m * k), b(k * n);
  for (uint8_t& v : a) v = Draw<uint8_t>(rng);
  for (uint8_t& v : b) v = static_cast<uint8_t>(rng() % 256);
  const std::vector<int32_t> b_zp = {128};
  std::vector<int8_t> centred(k * n);
  for (int64_t i = 0; i < k * n; ++i) centred[i] = static_cast<int8_t>(int{b[i]} - 128);
  const std::vector<int32_t> zps(m, 3);
  const std::vector<int32_t> expected = Naive(a, m, k, centred, n, zps);
  CenteredWeights<uint8_t> w = Centered(b, k, n, n, b_zp);
  w.with_wide = false;
  int64_t max_abs = 0;
  const std::optional<PackedInt8Weights> packed = PackCenteredInt8Weights(w, &max_abs);
  ASSERT_TRUE(packed.has_value());
  ASSERT_FALSE(packed->fits_maddubs);
  for (Int8GemmIsa isa : AvailableIsas()) {
    SCOPED_TRACE(Int8GemmIsaName(isa));
    EXPECT_EQ(RunGemm(a, m, k, zps, false, *packed, n, isa), expected);
  }
}

TEST(Int8GemmTest, PackRecordsWhetherWeightsFitMaddubs) {
  std::vector<int8_t> b = {-64, 64, 0, 3, -1, 64};
  EXPECT_TRUE(PackInt8Weights(b.data(), 2, 3, 3, 1).fits_maddubs);
  b[4] = 65;
  EXPECT_FALSE(PackInt8Weights(b.data(), 2, 3, 3, 1).fits_maddubs);
  b[4] = -65;
  EXPECT_FALSE(PackInt8Weights(b.data(), 2, 3, 3, 1).fits_maddubs);
  b[4] = -128;
  EXPECT_FALSE(PackInt8Weights(b.data(), 2, 3, 3, 1).fits_maddubs);
  EXPECT_TRUE(PackInt8Weights(nullptr, 0, 3, 3, 1).fits_maddubs);
}

TEST(Int8GemmTest, SevenBitWeightsMatchScalarAndReference) {
  if (!Int8GemmIsaAvailable(Int8GemmIsa::kAvx2)) GTEST_SKIP() << "AVX2 not available (or capped by QFUSE_MAX_ISA)";
  uint32_t seed = 1000;
  for (int64_t k : {1, 3, 4, 5, 31, 64, 147}) {
    for (int64_t n : {1, 8, 15, 16, 17, 33}) {
      for (int64_t m : {1, 3, 4, 5, 13}) {
        for (int64_t lda_pad : {0, 5}) {
          CheckSevenBit<uint8_t>(m, n, k, lda_pad, /*per_row_zp=*/false, nullptr, seed++);
          CheckSevenBit<int8_t>(m, n, k, lda_pad, /*per_row_zp=*/false, nullptr, seed++);
          CheckSevenBit<uint8_t>(m, n, k, lda_pad, /*per_row_zp=*/true, nullptr, seed++);
          CheckSevenBit<int8_t>(m, n, k, lda_pad, /*per_row_zp=*/true, nullptr, seed++);
        }
      }
    }
  }
}

TEST(Int8GemmTest, SevenBitWeightsThreaded) {
  if (!Int8GemmIsaAvailable(Int8GemmIsa::kAvx2)) GTEST_SKIP() << "AVX2 not available (or capped by QFUSE_MAX_ISA)";
  ThreadPool pool(2);
  CheckSevenBit<uint8_t>(1001, 40, 147, /*lda_pad=*/3, /*per_row_zp=*/true, &pool, 11);
  CheckSevenBit<int8_t>(333, 96, 71, /*lda_pad=*/0, /*per_row_zp=*/false, &pool, 12);
}

// (a - zp) = 255 times b = -64 or 64 over the largest K whose sum fits int32:
// 131586 * 255 * 64 = 2147483520 <= 2^31 - 1.
TEST(Int8GemmTest, SevenBitWeightsAtTheInt32Limit) {
  const int64_t m = 3, n = 17, k = 131586;
  const std::vector<uint8_t> a_u8(m * k, 255);
  const std::vector<int8_t> a_s8(m * k, 127);
  const std::vector<int32_t> zp_u8(m, 0), zp_s8(m, -128);
  for (int8_t w : {-64, 64}) {
    SCOPED_TRACE(testing::Message() << "b=" << int{w});
    const std::vector<int8_t> b(k * n, w);
    const PackedInt8Weights packed = PackInt8Weights(b.data(), k, n, n, 1);
    ASSERT_TRUE(packed.fits_maddubs);
    const std::vector<int32_t> expected(m * n, static_cast<int32_t>(int64_t{255} * w * k));
    for (Int8GemmIsa isa : AvailableIsas()) {
      SCOPED_TRACE(Int8GemmIsaName(isa));
      ExpectSame(RunGemm(a_u8, m, k, zp_u8, false, packed, n, isa), expected, n, "uint8 A");
      ExpectSame(RunGemm(a_s8, m, k, zp_s8, true, packed, n, isa), expected, n, "int8 A");
    }
  }
}

// One weight of +-65 next to a 64 in the same k pair, under A = 255: maddubs would saturate
// (255 * 65 + 255 * 64 = 32895 > 32767), so the pack must choose the madd path.
TEST(Int8GemmTest, OneWeightOutside7BitsTakesTheExactPath) {
  if (!Int8GemmIsaAvailable(Int8GemmIsa::kAvx2)) GTEST_SKIP() << "AVX2 not available (or capped by QFUSE_MAX_ISA)";
  const int64_t m = 5, n = 17, k = 147, lda = k + 2, ldc = n + 1;
  std::mt19937 rng(21);
  std::vector<uint8_t> a(m * lda, 255);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t kk = 8; kk < k; ++kk) a[i * lda + kk] = Draw<uint8_t>(rng);
  }
  for (int8_t outlier : {65, -65}) {
    SCOPED_TRACE(testing::Message() << "outlier " << int{outlier});
    std::vector<int8_t> b(k * n);
    for (int8_t& v : b) v = DrawSevenBit(rng);
    // Column 9, k = 4 and 5: one maddubs pair.
    b[4 * n + 9] = outlier;
    b[5 * n + 9] = outlier > 0 ? 64 : -64;
    const PackedInt8Weights packed = PackInt8Weights(b.data(), k, n, n, 1);
    ASSERT_FALSE(packed.fits_maddubs);
    const std::vector<int32_t> zps(m, 0);
    const std::vector<int32_t> expected = Naive(a, m, k, b, n, zps, lda);
    const std::vector<int32_t> scalar = RunGemm(a, m, lda, zps, false, packed, ldc, Int8GemmIsa::kScalar);
    ExpectSame(scalar, expected, n, "scalar vs int64 reference");
    for (Int8GemmIsa isa : SimdIsas()) {
      SCOPED_TRACE(Int8GemmIsaName(isa));
      const std::vector<int32_t> c = RunGemm(a, m, lda, zps, false, packed, ldc, isa);
      ExpectSame(c, expected, n, "vs int64 reference");
      ExpectSame(c, scalar, n, "vs scalar");
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant
