// The runtime's threads: a blocking ParallelFor over an index range on OpenMP (GCC's
// libgomp), the threading runtime Debian's oneDNN is built with, so hand-written kernels
// and oneDNN primitives share one team of threads instead of two pools spinning against
// each other on the same cores.
#ifndef QFUSE_RUNTIME_THREAD_POOL_H_
#define QFUSE_RUNTIME_THREAD_POOL_H_

#include <cstdint>
#include <functional>
#include <memory>

namespace qfuse::runtime {

class ThreadPool {
 public:
  // `num_threads` >= 1 counts the calling thread: 2 means one worker plus the caller.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n) and returns when all are
  // done. Chunks hold at least `min_chunk` indices, so tiny ranges run inline.
  void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) const;

 private:
  struct Impl;
  int num_threads_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_THREAD_POOL_H_
