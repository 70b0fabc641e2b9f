#include "runtime/kernels/nn/global_average_row.h"

#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::kernels {
namespace {

constexpr int kLanes = 4;
// kSequential's AVX2 path averages this many rows at once, one per lane.
constexpr int64_t kRowsPerVector = 8;

// s = (a0 + a2) + (a1 + a3), then the values from `begin` on added one by one.
float FinishFourLanes(const float (&lanes)[kLanes], const float* x, int64_t begin, int64_t n) {
  float s = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
  for (int64_t i = begin; i < n; ++i) s += x[i];
  return s;
}

float FourLanesSum(const float* x, int64_t n) {
  float lanes[kLanes] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
  }
  return FinishFourLanes(lanes, x, i, n);
}

float SequentialSum(const float* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

void PortableRows(const float* x, int64_t rows, int64_t n, GlobalAverageOrder order, float* y) {
  const float count = static_cast<float>(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    y[r] = (order == GlobalAverageOrder::kFourLanes ? FourLanesSum(row, n) : SequentialSum(row, n)) / count;
  }
}

__attribute__((target("avx2"))) void Avx2Rows(const float* x, int64_t rows, int64_t n, GlobalAverageOrder order,
                                              float* y) {
  const float count = static_cast<float>(n);
  int64_t r = 0;
  if (order == GlobalAverageOrder::kFourLanes) {
    for (; r < rows; ++r) {
      const float* row = x + r * n;
      __m128 acc = _mm_setzero_ps();
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes) acc = _mm_add_ps(acc, _mm_loadu_ps(row + i));
      float lanes[kLanes];
      _mm_storeu_ps(lanes, acc);
      y[r] = FinishFourLanes(lanes, row, i, n) / count;
    }
    return;
  }
  // kSequential: lane k sums row r + k in order (a gather of column i of eight rows).
  if (n <= std::numeric_limits<int32_t>::max() / kRowsPerVector) {
    const int32_t stride = static_cast<int32_t>(n);
    const __m256i offsets =
        _mm256_setr_epi32(0, stride, 2 * stride, 3 * stride, 4 * stride, 5 * stride, 6 * stride, 7 * stride);
    const __m256 divisor = _mm256_set1_ps(count);
    for (; r + kRowsPerVector <= rows; r += kRowsPerVector) {
      const float* block = x + r * n;
      __m256 acc = _mm256_setzero_ps();
      for (int64_t i = 0; i < n; ++i) acc = _mm256_add_ps(acc, _mm256_i32gather_ps(block + i, offsets, 4));
      _mm256_storeu_ps(y + r, _mm256_div_ps(acc, divisor));
    }
  }
  for (; r < rows; ++r) y[r] = SequentialSum(x + r * n, n) / count;
}

}  // namespace

int64_t OnnxruntimeNchwcBlock() { return IsaAllowed(Isa::kAvx512) ? 16 : 8; }

GlobalAverageOrder GlobalAverageOrderFor(const GlobalAverageInput& input, int64_t nchwc_block) {
  const bool nchwc = input.graph_input && input.rank == 4 && input.channels >= 0 && nchwc_block > 0 &&
                     input.channels % nchwc_block == 0;
  return nchwc ? GlobalAverageOrder::kSequential : GlobalAverageOrder::kFourLanes;
}

void GlobalAverageRows(const float* x, int64_t rows, int64_t n, GlobalAverageOrder order, float* y, bool vector) {
  if (vector && IsaAllowed(Isa::kAvx2)) {
    Avx2Rows(x, rows, n, order, y);
  } else {
    PortableRows(x, rows, n, order, y);
  }
}

}  // namespace qfuse::runtime::kernels
