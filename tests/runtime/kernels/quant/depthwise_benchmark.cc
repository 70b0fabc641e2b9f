// Times qfuse's channels-last int8 depthwise convolution (nhwc_conv.h) on MobileNetV2's
// depthwise layer shapes (each once) at 224x224, batch 16 (3x3, pad 1, stride 1 or 2), the accumulators only
// (the output stage is not run). Prints ms per call and GMAC/s (9 multiply-adds per output
// value), with one and two threads. Run by hand:
//   bazel run -c opt //tests/runtime/kernels/quant:depthwise_benchmark
// (QFUSE_MAX_ISA in the environment picks the path: avx2 times vpmaddwd, avx2_vnni the VEX
// vpdpwssd, scalar the scalar loop; the first line names the pair-dot form that ran.)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/quant/nhwc_conv.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {
namespace {

struct Layer {
  int64_t channels, size, stride;
};

// Best of `reps` seconds of one convolution of `batch` images.
double Seconds(const Layer& l, int64_t batch, const ThreadPool* pool, int reps) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  ir::Tensor w = ir::Tensor::Create(ir::DataType::kInt8, {l.channels, 1, 3, 3}).value();
  auto* wd = static_cast<uint8_t*>(w.raw_data());
  for (int64_t i = 0; i < w.num_elements(); ++i) wd[i] = static_cast<uint8_t>(byte(rng));
  const NhwcConvWeights prepared = PrepareNhwcConvWeights(w, l.channels, {0});
  std::vector<uint8_t> x(static_cast<size_t>(batch * l.size * l.size * l.channels));
  for (uint8_t& v : x) v = static_cast<uint8_t>(byte(rng) / 2);
  linalg::ConvAttrs attrs;
  attrs.group = l.channels;
  attrs.strides = {l.stride, l.stride};
  attrs.pads = {1, 1, 1, 1};
  const linalg::ConvGeometry g = linalg::ResolveConv(attrs, {l.size, l.size}, {3, 3}).value();
  NhwcConvArgs args;
  args.geometry = &g;
  args.x = x.data();
  args.x_zero_point = 0;
  args.batch = batch;
  args.pool = pool;
  std::atomic<int64_t> sink{0};  // the tiles run on both pool threads
  const auto run = [&] {
    ForEachNhwcConvTile(args, prepared, [&](int64_t, int64_t, const int32_t* acc) {
      sink.fetch_add(acc[0], std::memory_order_relaxed);
    });
  };
  run();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (sink.load() == 42) std::printf(" ");  // keeps the sums live
  return best;
}

int Main() {
  const Layer layers[] = {{32, 112, 1},  {96, 112, 2}, {144, 56, 1}, {144, 56, 2}, {192, 28, 1},
                          {192, 28, 2},  {384, 14, 1}, {576, 14, 1}, {576, 14, 2}, {960, 7, 1}};
  const int64_t batch = 16;
  ThreadPool one(1), two(2);
  std::printf("pair dot: %s\n", DepthwisePairDotName());
  std::printf("| channels | input | stride | ms (1 thread) | GMAC/s | ms (2 threads) | GMAC/s |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  double total1 = 0, total2 = 0;
  for (const Layer& l : layers) {
    const int64_t out = (l.size + 2 - 3) / l.stride + 1;
    const double macs = 9.0 * batch * out * out * l.channels;
    const double s1 = Seconds(l, batch, &one, 10), s2 = Seconds(l, batch, &two, 10);
    total1 += s1;
    total2 += s2;
    std::printf("| %lld | %lldx%lld | %lld | %.3f | %.1f | %.3f | %.1f |\n", static_cast<long long>(l.channels),
                static_cast<long long>(l.size), static_cast<long long>(l.size), static_cast<long long>(l.stride),
                s1 * 1e3, macs / s1 * 1e-9, s2 * 1e3, macs / s2 * 1e-9);
  }
  std::printf("total: %.3f ms (1 thread), %.3f ms (2 threads)\n", total1 * 1e3, total2 * 1e3);
  return 0;
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant

int main() { return qfuse::runtime::kernels::quant::Main(); }
