// Numpy-broadcast iteration for elementwise kernels: shapes are collapsed once per
// Run into rows whose operands advance with stride 0 or 1, so the inner loops are
// plain (vectorisable) loops with no per-element index arithmetic.
#ifndef QFUSE_RUNTIME_KERNELS_ELEMENTWISE_BROADCAST_H_
#define QFUSE_RUNTIME_KERNELS_ELEMENTWISE_BROADCAST_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels {

struct BroadcastPlan {
  std::vector<int64_t> out_dims;  // the broadcast output shape
  // Collapsed view: dims[0..k) with per-operand strides (0 on broadcast axes).
  std::vector<int64_t> dims;
  std::vector<int64_t> a_strides;
  std::vector<int64_t> b_strides;
  int64_t inner = 1;  // dims.back()
  int64_t a_step = 0;  // stride of a along the inner dim: 0 or 1
  int64_t b_step = 0;
  int64_t num_elements = 0;
};

// Plans `a op b` with numpy broadcasting; InvalidArgument naming both shapes when
// they do not broadcast.
absl::StatusOr<BroadcastPlan> MakeBroadcastPlan(absl::Span<const int64_t> a, absl::Span<const int64_t> b);

// Calls fn(out_offset, a_offset, b_offset, n) for contiguous runs of output elements
// covering [begin, end) of the flattened output; along a run a advances by
// plan.a_step and b by plan.b_step.
template <typename Fn>
void ForEachRun(const BroadcastPlan& plan, int64_t begin, int64_t end, Fn&& fn) {
  const int64_t inner = plan.inner;
  const int64_t rank = static_cast<int64_t>(plan.dims.size());
  int64_t pos = begin;
  while (pos < end) {
    int64_t row = pos / inner;
    const int64_t col = pos - row * inner;
    const int64_t n = std::min(inner - col, end - pos);
    int64_t a_off = col * plan.a_step;
    int64_t b_off = col * plan.b_step;
    for (int64_t d = rank - 2; d >= 0 && row > 0; --d) {
      const int64_t i = row % plan.dims[d];
      row /= plan.dims[d];
      a_off += i * plan.a_strides[d];
      b_off += i * plan.b_strides[d];
    }
    fn(pos, a_off, b_off, n);
    pos += n;
  }
}

// Splits [0, n) over the pool in chunks big enough to amortise scheduling.
inline void ParallelElements(const ThreadPool& pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  constexpr int64_t kMinChunk = 1 << 15;
  pool.ParallelFor(n, kMinChunk, fn);
}

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_ELEMENTWISE_BROADCAST_H_
