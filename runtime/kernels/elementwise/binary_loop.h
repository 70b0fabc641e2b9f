// The broadcast binary inner loop shared by the binary and variadic kernels, and
// wrap-around integer arithmetic (two's complement, no undefined overflow).
#ifndef QFUSE_RUNTIME_KERNELS_ELEMENTWISE_BINARY_LOOP_H_
#define QFUSE_RUNTIME_KERNELS_ELEMENTWISE_BINARY_LOOP_H_

#include <cstdint>
#include <type_traits>

#include "runtime/kernels/elementwise/broadcast.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels {

template <typename T, bool kWiden = std::is_integral_v<T> && sizeof(T) >= sizeof(int)>
struct WrapTypeOf {
  using type = T;
};
template <typename T>
struct WrapTypeOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using WrapType = typename WrapTypeOf<T>::type;

template <typename T>
inline T WrapAdd(T a, T b) {
  using W = WrapType<T>;
  return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
}
template <typename T>
inline T WrapSub(T a, T b) {
  using W = WrapType<T>;
  return static_cast<T>(static_cast<W>(a) - static_cast<W>(b));
}
template <typename T>
inline T WrapMul(T a, T b) {
  using W = WrapType<T>;
  if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(int)) {
    // Promoted to int: the product of two 16-bit values fits; wrap on the way back.
    return static_cast<T>(static_cast<int>(a) * static_cast<int>(b));
  } else {
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
  }
}

// out = fn(a, b) elementwise over `plan` (see MakeBroadcastPlan), in parallel.
template <typename A, typename B, typename O, typename Fn>
void BinaryLoop(const ThreadPool& pool, const BroadcastPlan& plan, const A* a, const B* b, O* out, Fn fn) {
  ParallelElements(pool, plan.num_elements, [&](int64_t begin, int64_t end) {
    ForEachRun(plan, begin, end, [&](int64_t o, int64_t ia, int64_t ib, int64_t n) {
      O* y = out + o;
      const A* x0 = a + ia;
      const B* x1 = b + ib;
      if (plan.a_step == 1 && plan.b_step == 1) {
        for (int64_t i = 0; i < n; ++i) y[i] = fn(x0[i], x1[i]);
      } else if (plan.a_step == 1) {
        const B v = *x1;
        for (int64_t i = 0; i < n; ++i) y[i] = fn(x0[i], v);
      } else if (plan.b_step == 1) {
        const A v = *x0;
        for (int64_t i = 0; i < n; ++i) y[i] = fn(v, x1[i]);
      } else {
        const O v = fn(*x0, *x1);
        for (int64_t i = 0; i < n; ++i) y[i] = v;
      }
    });
  });
}

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_ELEMENTWISE_BINARY_LOOP_H_
