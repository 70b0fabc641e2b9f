// GrowTo: a reused scratch vector made to hold at least n elements, never shrunk. Resizing a
// vector down and up again zero-fills the new elements on every call (2.5% of MobileNetV2's
// int8 time in perf, when the convolution's scratch did).
#ifndef QFUSE_BASE_GROW_BUFFER_H_
#define QFUSE_BASE_GROW_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qfuse {

template <typename T>
void GrowTo(std::vector<T>& buffer, int64_t n) {
  if (buffer.size() < static_cast<size_t>(n)) buffer.resize(static_cast<size_t>(n));
}

}  // namespace qfuse

#endif  // QFUSE_BASE_GROW_BUFFER_H_
