// Speed of LookupBytes per ISA level on 1 MiB of bytes (in L2/L3) and 256 KiB (in L2).
// Run: bazel run -c opt //tests/runtime/int8:byte_table_benchmark
#include <array>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "runtime/cpu_isa.h"
#include "runtime/int8/byte_table.h"

namespace qfuse::runtime::int8 {
namespace {

// args: ISA (0 scalar, 1 AVX2), bytes.
void BM_LookupBytes(benchmark::State& state) {
  const Isa cap = state.range(0) == 0 ? Isa::kScalar : Isa::kAvx2;
  if (cap > DetectedIsa()) {
    state.SkipWithError("ISA not available here");
    return;
  }
  SetIsaCap(cap);
  std::mt19937 rng(3);
  std::array<uint8_t, 256> table{};
  for (uint8_t& v : table) v = static_cast<uint8_t>(rng());
  std::vector<uint8_t> x(static_cast<size_t>(state.range(1))), y(x.size());
  for (uint8_t& v : x) v = static_cast<uint8_t>(rng());
  for (auto _ : state) {
    LookupBytes(table, x.data(), static_cast<int64_t>(x.size()), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * state.range(1));
  SetIsaCap(Isa::kAmx);
}
BENCHMARK(BM_LookupBytes)->ArgsProduct({{0, 1}, {1 << 18, 1 << 20}});

}  // namespace
}  // namespace qfuse::runtime::int8

BENCHMARK_MAIN();
