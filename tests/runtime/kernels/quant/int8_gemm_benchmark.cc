// Times the int8 GEMM (each available path) against the float GEMM of the linalg kernels
// (eigen_gemm.h: the packed AVX2/FMA kernel) at conv-like sizes: M output pixels
// (batch 64 at 28x28 / 14x14), N output channels, K = taps * input channels. A second
// table repeats the sizes with 7-bit weights (|b| <= 64, reduce_range), where kAvx2 takes
// the maddubs path, next to the int16 madd path on the same weights (fits_maddubs
// cleared). Prints GOPS (2 * M * N * K per run). Run by hand:
//   bazel run -c opt //tests/runtime/kernels/quant:int8_gemm_benchmark
// (QFUSE_MAX_ISA=avx2 in the environment hides the VNNI columns.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <random>
#include <vector>

#include "runtime/kernels/linalg/parallel_gemm.h"
#include "runtime/kernels/quant/int8_gemm.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {
namespace {

// Best-of-`reps` seconds of fn().
template <typename Fn>
double Time(Fn fn, int reps) {
  fn();  // warm-up
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

struct Size {
  const char* name;
  int64_t m, n, k;
};

// GOPS of Int8Gemm(A * packed) through `isa`, or 0 when this CPU (or QFUSE_MAX_ISA) lacks it.
double Int8Gops(const Size& s, const std::vector<uint8_t>& a, const PackedInt8Weights& packed, Int8GemmIsa isa,
                const ThreadPool* pool) {
  if (!Int8GemmIsaAvailable(isa)) return 0.0;
  std::vector<int32_t> c(s.m * s.n);
  Int8GemmArgs args;
  args.m = s.m;
  args.a = a.data();
  args.lda = s.k;
  args.a_zero_point = 3;
  args.c = c.data();
  args.ldc = s.n;
  args.pool = pool;
  args.isa = isa;
  const double seconds = Time([&] { Int8Gemm(args, packed); }, isa == Int8GemmIsa::kScalar ? 1 : 15);
  return 2.0 * s.m * s.n * s.k / seconds * 1e-9;
}

int Main() {
  const Size sizes[] = {
      {"3x3 16->16 @28x28", 64 * 28 * 28, 16, 9 * 16},  {"3x3 16->32 @28x28", 64 * 28 * 28, 32, 9 * 16},
      {"1x1 16->96 @28x28", 64 * 28 * 28, 96, 16},      {"3x3 32->32 @14x14", 64 * 14 * 14, 32, 9 * 32},
      {"1x1 96->24 @14x14", 64 * 14 * 14, 24, 96},      {"3x3 64->64 @14x14", 64 * 14 * 14, 64, 9 * 64},
      // ViT-tiny at batch 8 (65 tokens, width 192, MLP 768): qkv, MLP in / out, and one head's Q K^T.
      {"vit qkv 192->576", 8 * 65, 576, 192},           {"vit mlp 192->768", 8 * 65, 768, 192},
      {"vit mlp 768->192", 8 * 65, 192, 768},           {"vit head q k^t", 65, 65, 64},
  };
  ThreadPool pool(2);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127), s7(-64, 64);
  std::vector<std::vector<uint8_t>> as;
  std::printf("8-bit weights [-128, 127]\n");
  std::printf("%-20s %6s %4s %4s | %-22s %-22s %-22s %-22s | %-16s\n", "layer", "M", "N", "K", "int8 vnni 1t / 2t",
              "int8 avx-vnni 1t / 2t", "int8 avx2 1t / 2t", "int8 scalar 1t", "float 1t / 2t");
  for (const Size& s : sizes) {
    std::vector<uint8_t>& a = as.emplace_back(s.m * s.k);
    std::vector<int8_t> b(s.k * s.n);
    std::vector<float> af(s.m * s.k), bf(s.k * s.n), cf(s.m * s.n);
    for (size_t i = 0; i < a.size(); ++i) af[i] = a[i] = static_cast<uint8_t>(u8(rng));
    for (size_t i = 0; i < b.size(); ++i) bf[i] = b[i] = static_cast<int8_t>(s8(rng));
    const PackedInt8Weights packed = PackInt8Weights(b.data(), s.k, s.n, s.n, 1);
    const double ops = 2.0 * s.m * s.n * s.k;
    auto fl = [&](const ThreadPool* p) {
      return ops * 1e-9 / Time([&] {
        linalg::ParallelGemm<float>(p, false, false, s.m, s.n, s.k, 1.0f, af.data(), s.k, bf.data(), s.n, 0.0f,
                                    cf.data(), s.n);
      }, 15);
    };
    std::printf("%-20s %6lld %4lld %4lld | %8.1f / %-11.1f %8.1f / %-11.1f %8.1f / %-11.1f %8.1f %13s | "
                "%6.1f / %-6.1f\n",
                s.name, static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                Int8Gops(s, a, packed, Int8GemmIsa::kAvx512Vnni, nullptr),
                Int8Gops(s, a, packed, Int8GemmIsa::kAvx512Vnni, &pool),
                Int8Gops(s, a, packed, Int8GemmIsa::kAvxVnni, nullptr),
                Int8Gops(s, a, packed, Int8GemmIsa::kAvxVnni, &pool),
                Int8Gops(s, a, packed, Int8GemmIsa::kAvx2, nullptr), Int8Gops(s, a, packed, Int8GemmIsa::kAvx2, &pool),
                Int8Gops(s, a, packed, Int8GemmIsa::kScalar, nullptr), "", fl(nullptr), fl(&pool));
  }
  std::printf("\n7-bit weights [-64, 64] (reduce_range); avx2 madd = the same weights with fits_maddubs cleared\n");
  std::printf("%-20s %6s %4s %4s | %-22s %-22s %-22s | %s\n", "layer", "M", "N", "K", "int8 vnni 1t / 2t",
              "avx2 maddubs 1t / 2t", "avx2 madd 1t / 2t", "maddubs/madd 1t");
  for (size_t i = 0; i < std::size(sizes); ++i) {
    const Size& s = sizes[i];
    std::vector<int8_t> b(s.k * s.n);
    for (int8_t& v : b) v = static_cast<int8_t>(s7(rng));
    const PackedInt8Weights maddubs = PackInt8Weights(b.data(), s.k, s.n, s.n, 1);
    PackedInt8Weights madd = maddubs;
    madd.fits_maddubs = false;
    const double fast = Int8Gops(s, as[i], maddubs, Int8GemmIsa::kAvx2, nullptr);
    const double slow = Int8Gops(s, as[i], madd, Int8GemmIsa::kAvx2, nullptr);
    std::printf("%-20s %6lld %4lld %4lld | %8.1f / %-11.1f %8.1f / %-11.1f %8.1f / %-11.1f | %5.2fx\n", s.name,
                static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                Int8Gops(s, as[i], maddubs, Int8GemmIsa::kAvx512Vnni, nullptr),
                Int8Gops(s, as[i], maddubs, Int8GemmIsa::kAvx512Vnni, &pool), fast,
                Int8Gops(s, as[i], maddubs, Int8GemmIsa::kAvx2, &pool), slow,
                Int8Gops(s, as[i], madd, Int8GemmIsa::kAvx2, &pool), slow > 0 ? fast / slow : 0.0);
  }
  std::printf("GOPS = 2*M*N*K / best-of-15 seconds; 1t = calling thread, 2t = 2-thread pool.\n");
  return 0;
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant

int main() { return qfuse::runtime::kernels::quant::Main(); }
