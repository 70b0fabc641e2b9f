// Speed of the calibration observers: AbsHistogram::Add over one activation tensor, and
// the threshold search per method. Run: bazel run //tests/calib:histogram_benchmark
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "calib/histogram.h"
#include "calib/thresholds.h"

namespace qfuse::calib {
namespace {

std::vector<float> ReluLikeValues(int64_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = std::max(0.f, normal(rng));
  return v;
}

void BM_HistogramAdd(benchmark::State& state) {
  const std::vector<float> values = ReluLikeValues(state.range(0));
  AbsHistogram h;
  h.Add(values);  // sets the range
  for (auto _ : state) h.Add(values);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_HistogramAdd)->Arg(1 << 20);

void BM_Threshold(benchmark::State& state) {
  AbsHistogram h;
  h.Add(ReluLikeValues(1 << 20));
  ThresholdOptions options;
  options.method = static_cast<CalibrationMethod>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ComputeThreshold(h, options));
}
BENCHMARK(BM_Threshold)
    ->Arg(static_cast<int>(CalibrationMethod::kEntropy))
    ->Arg(static_cast<int>(CalibrationMethod::kPercentile))
    ->Arg(static_cast<int>(CalibrationMethod::kMse))
    ->Arg(static_cast<int>(CalibrationMethod::kMax));

}  // namespace
}  // namespace qfuse::calib

BENCHMARK_MAIN();
