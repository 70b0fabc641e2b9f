// TransposeBytes against a direct loop: whole tiles, ragged edges in both dims, one row or
// column, several matrices, and sizes that take the threaded path.
#include "runtime/kernels/quant/byte_transpose.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {
namespace {

struct Case {
  int64_t matrices, rows, cols;
};

TEST(ByteTransposeTest, EqualsDirectLoop) {
  const Case cases[] = {{1, 16, 16}, {1, 64, 240},  {1, 17, 33},   {3, 15, 16},   {2, 16, 15},   {1, 1, 40},
                        {1, 40, 1},  {4, 49, 576},  {1, 4096, 16}, {64, 784, 32}, {2, 33, 4097}, {1, 256, 96},
                        {5, 31, 47}, {1, 3, 16384}, {2, 1, 100},   {1, 7, 35},    {4, 3, 49}};
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (const Case& c : cases) {
      const int64_t size = c.rows * c.cols;
      std::vector<uint8_t> src(static_cast<size_t>(c.matrices * size)), got(src.size(), 0xA5), want(src.size());
      for (uint8_t& v : src) v = static_cast<uint8_t>(byte(rng));
      for (int64_t m = 0; m < c.matrices; ++m) {
        for (int64_t r = 0; r < c.rows; ++r) {
          for (int64_t col = 0; col < c.cols; ++col)
            want[m * size + col * c.rows + r] = src[m * size + r * c.cols + col];
        }
      }
      TransposeBytes(pool, src.data(), c.matrices, c.rows, c.cols, got.data());
      EXPECT_EQ(got, want) << c.matrices << " x " << c.rows << " x " << c.cols << ", " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant
