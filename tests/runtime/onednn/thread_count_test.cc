// An executor with a pool of N threads runs every OpenMP region, oneDNN's and qfuse's, on at
// most N threads. A oneDNN primitive asks for the thread count in force when it was made on
// every execution, so a primitive made before the pool's count was set kept asking for the
// machine's: with --threads=1 a second core spun in libgomp through the whole run.
//
// The check: this test binary defines GOMP_parallel, the entry point of every `omp parallel`
// region compiled by GCC (libdnnl.so's included: the executable's definition comes first in
// symbol lookup), records the team size each region asks for, and forwards to libgomp's.
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/onednn/int8_conv_engine.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/random_inputs.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace {

std::atomic<bool> recording{false};
std::atomic<int> largest_team{0};
std::atomic<int> regions{0};
std::atomic<int> onednn_regions{0};  // regions whose body is in libdnnl.so

}  // namespace

// libgomp's signature (GCC's libgomp/libgomp_g.h). num_threads 0: the calling thread's
// OpenMP thread count.
extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
  using Real = void (*)(void (*)(void*), void*, unsigned, unsigned);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "GOMP_parallel"));
  if (recording.load()) {
    const int team = num_threads == 0 ? omp_get_max_threads() : static_cast<int>(num_threads);
    int seen = largest_team.load();
    while (team > seen && !largest_team.compare_exchange_weak(seen, team)) {
    }
    regions.fetch_add(1);
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(fn), &info) != 0 && info.dli_fname != nullptr &&
        std::strstr(info.dli_fname, "libdnnl") != nullptr) {
      onednn_regions.fetch_add(1);
    }
  }
  real(fn, data, num_threads, flags);
}

namespace qfuse::runtime::onednn {
namespace {

// Makes an executor for `graph` with `threads` threads and runs it `runs` times on `inputs`
// (enough calls for the integer units to tune their engines), recording every region's team.
void RunRecorded(const ir::Graph& graph, int threads, const std::vector<NamedTensor>& inputs, int runs) {
  ExecutorOptions options;
  options.num_threads = threads;
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(graph, options));
  recording = true;
  for (int k = 0; k < runs; ++k) QFUSE_ASSERT_OK(exec->Run(inputs).status());
  recording = false;
}

class ThreadCountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (omp_get_num_procs() < 2) GTEST_SKIP() << "one CPU: every team has one thread";
    if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is switched off";
    largest_team = 0;
    regions = 0;
    onednn_regions = 0;
  }
  void TearDown() override { SetInt8ConvEngine(Int8ConvEngine::kAuto); }
};

absl::StatusOr<std::vector<NamedTensor>> Batch(const ir::Graph& graph, int64_t batch) {
  RandomInputOptions options;
  options.batch = batch;
  return RandomInputs(graph, options);
}

TEST_F(ThreadCountTest, OneThreadPoolRunsEveryRegionOnOneThread) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      ir::Model int8_model,
      testing::QuantizeSample("mobilenetv2_small", fusion::FusionLevel::kFull, quant::ActivationType::kUint8));
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase float_case, testing::LoadOnnxTestCase("models/resnet_small"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> int8_inputs, Batch(*int8_model.graph, 32));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> float_inputs, Batch(*float_case.model.graph, 32));
  // The calibration above ran on more threads: the setting in force is not one.
  for (Int8ConvEngine engine : {Int8ConvEngine::kOneDnn, Int8ConvEngine::kAuto}) {
    SetInt8ConvEngine(engine);
    RunRecorded(*int8_model.graph, 1, int8_inputs, 8);
  }
  RunRecorded(*float_case.model.graph, 1, float_inputs, 2);
  EXPECT_GT(regions.load(), 0);
  EXPECT_EQ(largest_team.load(), 1);
  // On a thread of the caller's own, whose OpenMP setting is the machine's default.
  largest_team = 0;
  std::thread([&] { RunRecorded(*int8_model.graph, 1, int8_inputs, 8); }).join();
  EXPECT_EQ(largest_team.load(), 1);
}

// The recording sees the regions: a pool of two threads asks for teams of two.
TEST_F(ThreadCountTest, TwoThreadPoolAsksForTwo) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      ir::Model int8_model,
      testing::QuantizeSample("mobilenetv2_small", fusion::FusionLevel::kFull, quant::ActivationType::kUint8));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> inputs, Batch(*int8_model.graph, 32));
  SetInt8ConvEngine(Int8ConvEngine::kOneDnn);
  RunRecorded(*int8_model.graph, 2, inputs, 2);
  EXPECT_EQ(largest_team.load(), 2);
  // libdnnl.so's own regions reach the recording too (with one thread oneDNN runs them inline,
  // without GOMP_parallel, so only a larger team shows them).
  EXPECT_GT(onednn_regions.load(), 0);
}

}  // namespace
}  // namespace qfuse::runtime::onednn
