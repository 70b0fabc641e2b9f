#include "runtime/thread_pool.h"

#include <algorithm>

#define EIGEN_USE_THREADS
#include <eigen3/unsupported/Eigen/CXX11/ThreadPool>

namespace qfuse::runtime {

struct ThreadPool::Impl {
  explicit Impl(int workers) : pool(workers) {}
  Eigen::ThreadPool pool;
};

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  if (num_threads_ > 1) impl_ = std::make_unique<Impl>(num_threads_ - 1);
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk,
                             const std::function<void(int64_t, int64_t)>& fn) const {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int64_t chunks = std::min<int64_t>(num_threads_, max_chunks);
  if (chunks <= 1 || impl_ == nullptr) {
    fn(0, n);
    return;
  }
  const int64_t step = (n + chunks - 1) / chunks;
  Eigen::Barrier barrier(static_cast<unsigned int>(chunks - 1));
  for (int64_t c = 1; c < chunks; ++c) {
    const int64_t begin = c * step;
    const int64_t end = std::min(n, begin + step);
    impl_->pool.Schedule([&fn, &barrier, begin, end] {
      if (begin < end) fn(begin, end);
      barrier.Notify();
    });
  }
  fn(0, std::min(n, step));
  barrier.Wait();
}

}  // namespace qfuse::runtime
