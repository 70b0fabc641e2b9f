// Times Conv / Gemm kernels on batch-64 layers of small ResNet / MobileNetV2-style
// CNNs on 28x28 inputs, 2 threads. Run by hand: bazel run //tests/runtime/kernels/linalg:linalg_benchmark
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"
#include "runtime/kernels/linalg/avx2_sgemm.h"
#include "runtime/kernels/linalg/avx512_sgemm.h"
#include "runtime/kernels/linalg/linalg.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime {
namespace {

using ir::DataType;

Tensor Random(std::vector<int64_t> dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DataType::kFloat32, std::move(dims));
  for (float& v : t.mutable_values<float>()) v = dist(rng);
  return t;
}

struct Layer {
  std::string name;
  std::string op;
  std::vector<int64_t> x, w;
  int64_t group = 1, stride = 1, pad = 0;
  double macs = 0;  // multiply-adds per run
};

// Single-threaded raw SGEMM (no im2col, no threads) on the conv layers' GEMM shapes,
// C[M,N] = W[M,K] * col[K,N] + C, for each available kernel.
void BenchSgemm(int reps) {
  using Fn = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                      float, float*, int64_t);
  struct Impl {
    const char* name;
    bool available;
    Fn fn;
  };
  const Impl impls[] = {{"avx2", kernels::linalg::Avx2SgemmAvailable(), &kernels::linalg::Avx2Sgemm},
                        {"avx512", kernels::linalg::Avx512SgemmAvailable(), &kernels::linalg::Avx512Sgemm}};
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{16, 784, 144}, {32, 196, 288}, {32, 196, 144}, {96, 784, 16},
                          {24, 196, 96},  {64, 128, 784}, {256, 256, 256}};
  for (const Shape& s : shapes) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    for (const Impl& impl : impls) {
      if (!impl.available) continue;
      const int inner = std::max<int64_t>(1, 200000000 / (s.m * s.n * s.k * reps));
      impl.fn(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 1.0f, c.data(), s.n);
      const std::clock_t cpu_start = std::clock();
      for (int i = 0; i < reps * inner; ++i) {
        impl.fn(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 1.0f, c.data(), s.n);
      }
      const double sec = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC / (reps * inner);
      std::printf("sgemm %-6s M=%-4lld N=%-4lld K=%-4lld %8.2f GFLOP/s\n", impl.name, static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k), 2.0 * s.m * s.n * s.k / sec / 1e9);
    }
  }
}

int Main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "sgemm") {
    BenchSgemm(argc > 2 ? std::atoi(argv[2]) : 20);
    return 0;
  }
  ThreadPool pool(2);
  KernelContext ctx{&pool};
  std::vector<Layer> layers = {
      {"conv3x3 16->16 28x28", "Conv", {64, 16, 28, 28}, {16, 16, 3, 3}, 1, 1, 1},
      {"conv3x3 1->16 28x28 (stem)", "Conv", {64, 1, 28, 28}, {16, 1, 3, 3}, 1, 1, 1},
      {"conv3x3 32->32 14x14", "Conv", {64, 32, 14, 14}, {32, 32, 3, 3}, 1, 1, 1},
      {"conv3x3 s2 16->32 28x28", "Conv", {64, 16, 28, 28}, {32, 16, 3, 3}, 1, 2, 1},
      {"pointwise 16->96 28x28", "Conv", {64, 16, 28, 28}, {96, 16, 1, 1}, 1, 1, 0},
      {"pointwise 96->24 14x14", "Conv", {64, 96, 14, 14}, {24, 96, 1, 1}, 1, 1, 0},
      {"depthwise 3x3 96 28x28", "Conv", {64, 96, 28, 28}, {96, 1, 3, 3}, 96, 1, 1},
      {"depthwise 3x3 s2 96 28x28", "Conv", {64, 96, 28, 28}, {96, 1, 3, 3}, 96, 2, 1},
      {"gemm 64x512 * 512x10 (transB)", "Gemm", {64, 512}, {10, 512}},
      {"matmul 64x784 * 784x128", "MatMul", {64, 784}, {784, 128}},
  };
  for (const Layer& layer : layers) {
    if (argc > 1 && layer.name.find(argv[1]) == std::string::npos) continue;
    ir::Graph graph;
    ir::AttributeMap attrs;
    if (layer.op == "Conv") {
      attrs.Set("group", layer.group);
      attrs.Set("strides", std::vector<int64_t>{layer.stride, layer.stride});
      attrs.Set("pads", std::vector<int64_t>(4, layer.pad));
    } else if (layer.op == "Gemm") {
      attrs.Set("transB", int64_t{1});
    }
    Tensor x = Random(layer.x, 1), w = Random(layer.w, 2), b = Random({layer.w[0]}, 3);
    auto xv = graph.AddInput("x", ir::TensorType{DataType::kFloat32, ir::Shape::Unknown(), std::nullopt});
    auto wv = graph.AddConstant("w", w);
    std::vector<ir::Value*> ins = {*xv, *wv};
    if (layer.op != "MatMul") ins.push_back(*graph.AddConstant("b", b));
    const std::vector<std::string> outs = {"y"};
    auto node = graph.AddNode(layer.op, "n", ins, outs, attrs);
    absl::StatusOr<std::unique_ptr<Kernel>> kernel =
        layer.op == "Conv" ? kernels::CreateConvKernel(**node)
                           : (layer.op == "Gemm" ? kernels::CreateGemmKernel(**node) : kernels::CreateMatMulKernel(**node));
    if (!kernel.ok()) {
      std::printf("%s: %s\n", layer.name.c_str(), kernel.status().ToString().c_str());
      return 1;
    }
    std::vector<const Tensor*> inputs = {&x, &w};
    if (layer.op != "MatMul") inputs.push_back(&b);
    std::vector<Tensor> outputs(1);
    auto run = [&] {
      absl::Status s = (*kernel)->Run(ctx, inputs, absl::MakeSpan(outputs));
      if (!s.ok()) std::printf("%s\n", s.ToString().c_str());
    };
    run();
    const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    for (int i = 0; i < reps; ++i) run();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
    const double cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC / reps;
    double macs = static_cast<double>(outputs[0].num_elements());
    if (layer.op == "Conv") {
      macs *= static_cast<double>(w.num_elements() / w.dims()[0]);
    } else {
      macs *= static_cast<double>(layer.x[1]);
    }
    // CPU time (both threads) is the steadier number on a shared machine.
    std::printf("%-32s wall %8.3f ms  cpu %8.3f ms  %6.2f GFLOP/s per cpu-second\n", layer.name.c_str(), ms, cpu_ms,
                2 * macs / cpu_ms / 1e6);
  }
  return 0;
}

}  // namespace
}  // namespace qfuse::runtime

// Optional argument: run only layers whose name contains it ("sgemm": raw SGEMM kernels instead).
int main(int argc, char** argv) { return qfuse::runtime::Main(argc, argv); }
