// Times the int8 GEMM (each available path) against the float GEMM of the linalg kernels
// (eigen_gemm.h: the packed AVX2/FMA kernel) at conv-like sizes: M output pixels
// (batch 64 at 28x28 / 14x14), N output channels, K = taps * input channels. Prints
// GOPS (2 * M * N * K per run). Run by hand:
//   bazel run -c opt //tests/runtime/kernels/quant:int8_gemm_benchmark
#include <algorithm>
#include <chrono>
#include <cstdio>
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

int Main() {
  const Size sizes[] = {
      {"3x3 16->16 @28x28", 64 * 28 * 28, 16, 9 * 16},  {"3x3 16->32 @28x28", 64 * 28 * 28, 32, 9 * 16},
      {"1x1 16->96 @28x28", 64 * 28 * 28, 96, 16},      {"3x3 32->32 @14x14", 64 * 14 * 14, 32, 9 * 32},
      {"1x1 96->24 @14x14", 64 * 14 * 14, 24, 96},      {"3x3 64->64 @14x14", 64 * 14 * 14, 64, 9 * 64},
  };
  ThreadPool pool(2);
  std::mt19937 rng(1);
  std::printf("%-20s %6s %4s %4s | %-22s %-22s %-22s | %-16s\n", "layer", "M", "N", "K", "int8 vnni 1t / 2t",
              "int8 avx2 1t / 2t", "int8 scalar 1t", "float 1t / 2t");
  for (const Size& s : sizes) {
    std::vector<uint8_t> a(s.m * s.k);
    std::vector<int8_t> b(s.k * s.n);
    std::vector<float> af(s.m * s.k), bf(s.k * s.n), cf(s.m * s.n);
    std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
    for (size_t i = 0; i < a.size(); ++i) af[i] = a[i] = static_cast<uint8_t>(u8(rng));
    for (size_t i = 0; i < b.size(); ++i) bf[i] = b[i] = static_cast<int8_t>(s8(rng));
    std::vector<int32_t> c(s.m * s.n);
    const PackedInt8Weights packed = PackInt8Weights(b.data(), s.k, s.n, s.n, 1);
    const double ops = 2.0 * s.m * s.n * s.k;
    auto gops = [&](double seconds) { return ops / seconds * 1e-9; };
    auto int8 = [&](Int8GemmIsa isa, const ThreadPool* p) {
      if (!Int8GemmIsaAvailable(isa)) return 0.0;
      Int8GemmArgs args;
      args.m = s.m;
      args.a = a.data();
      args.lda = s.k;
      args.a_zero_point = 3;
      args.c = c.data();
      args.ldc = s.n;
      args.pool = p;
      args.isa = isa;
      return gops(Time([&] { Int8Gemm(args, packed); }, isa == Int8GemmIsa::kScalar ? 1 : 15));
    };
    auto fl = [&](const ThreadPool* p) {
      return gops(Time([&] {
        linalg::ParallelGemm<float>(p, false, false, s.m, s.n, s.k, 1.0f, af.data(), s.k, bf.data(), s.n, 0.0f,
                                    cf.data(), s.n);
      }, 15));
    };
    std::printf("%-20s %6lld %4lld %4lld | %8.1f / %-11.1f %8.1f / %-11.1f %8.1f %13s | %6.1f / %-6.1f\n", s.name,
                static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                int8(Int8GemmIsa::kAvx512Vnni, nullptr), int8(Int8GemmIsa::kAvx512Vnni, &pool),
                int8(Int8GemmIsa::kAvx2, nullptr), int8(Int8GemmIsa::kAvx2, &pool), int8(Int8GemmIsa::kScalar, nullptr),
                "", fl(nullptr), fl(&pool));
  }
  std::printf("GOPS = 2*M*N*K / best-of-15 seconds; 1t = calling thread, 2t = 2-thread pool.\n");
  return 0;
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant

int main() { return qfuse::runtime::kernels::quant::Main(); }
