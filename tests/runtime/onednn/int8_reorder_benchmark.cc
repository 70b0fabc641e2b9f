// Times the int8 layout change between channels-last (NHWC) and plain (NCHW) bytes two ways:
// qfuse's 16 x 16 tile transpose (runtime/kernels/quant/byte_transpose.h, what ReorderInt8
// runs for 16 rows and 16 columns or more per image) and a oneDNN u8 reorder primitive (made once, then
// executed), at the shapes of squeeze-excitation blocks and a 3-channel input. Prints the
// median of 300 runs in microseconds, both directions. Run by hand:
//   bazel run -c opt //tests/runtime/onednn:int8_reorder_benchmark
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "runtime/kernels/quant/byte_transpose.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::onednn {
namespace {

using dnnl::memory;

// Median microseconds of `runs` calls of fn().
template <typename Fn>
double MedianUs(Fn fn, int runs) {
  for (int r = 0; r < 10; ++r) fn();
  std::vector<double> us;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + runs / 2, us.end());
  return us[runs / 2];
}

void Run() {
  ThreadPool pool(2);
  UseThreadsOf(pool);
  const std::vector<std::vector<int64_t>> shapes = {{1, 240, 8, 8},  {1, 96, 16, 16}, {1, 576, 4, 4},
                                                    {1, 16, 64, 64}, {8, 240, 8, 8},  {1, 3, 128, 128}};
  std::printf("%-16s %-10s %10s %10s\n", "NCHW dims", "direction", "tiles us", "oneDNN us");
  for (const std::vector<int64_t>& d : shapes) {
    const int64_t bytes = d[0] * d[1] * d[2] * d[3], pixels = d[2] * d[3];
    std::vector<uint8_t> src(static_cast<size_t>(bytes), 7), dst(static_cast<size_t>(bytes));
    const memory::dims dims(d.begin(), d.end());
    const memory::desc nchw(dims, memory::data_type::u8, memory::format_tag::nchw);
    const memory::desc nhwc(dims, memory::data_type::u8, memory::format_tag::nhwc);
    for (bool from_last : {true, false}) {
      const int64_t rows = from_last ? pixels : d[1], cols = from_last ? d[1] : pixels;
      const double tiles =
          MedianUs([&] { kernels::quant::TransposeBytes(pool, src.data(), d[0], rows, cols, dst.data()); }, 300);
      memory from(from_last ? nhwc : nchw, Engine(), src.data()), to(from_last ? nchw : nhwc, Engine(), dst.data());
      dnnl::reorder reorder(from, to);
      const double onednn = MedianUs(
          [&] {
            reorder.execute(Stream(), from, to);
            Stream().wait();
          },
          300);
      std::printf("%ldx%ldx%ldx%-6ld %-10s %10.2f %10.2f\n", static_cast<long>(d[0]), static_cast<long>(d[1]),
                  static_cast<long>(d[2]), static_cast<long>(d[3]), from_last ? "NHWC>NCHW" : "NCHW>NHWC", tiles,
                  onednn);
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::onednn

int main() {
  qfuse::runtime::onednn::Run();
  return 0;
}
