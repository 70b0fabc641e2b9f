#include "runtime/thread_pool.h"

#include <algorithm>

namespace qfuse::runtime {

// OpenMP keeps its own team of threads per process; the pool only records how many of
// them a ParallelFor may use.
struct ThreadPool::Impl {};

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {}

ThreadPool::~ThreadPool() = default;

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk,
                             const std::function<void(int64_t, int64_t)>& fn) const {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int chunks = static_cast<int>(std::min<int64_t>(num_threads_, max_chunks));
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  const int64_t step = (n + chunks - 1) / chunks;
  // The calling thread is thread 0 of the team; a ParallelFor inside another runs serially
  // (OpenMP's nested parallelism is off by default).
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = c * step;
    const int64_t end = std::min(n, begin + step);
    if (begin < end) fn(begin, end);
  }
}

}  // namespace qfuse::runtime
