// Overflow-checked integer arithmetic for shapes, element counts and byte counts.
// Every size that comes from a file, an attribute or a tensor's values goes through
// these before anything is allocated or indexed: a wrapped product (4 * (2^62 + 196)
// == 784) would otherwise describe data that does not exist.
#ifndef QFUSE_BASE_CHECKED_MATH_H_
#define QFUSE_BASE_CHECKED_MATH_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace qfuse::base {

// The largest tensor qfuse allocates by default (1 TiB). Anything larger is refused as
// a ResourceExhausted error instead of asking the allocator.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;

// The cap in force: kMaxTensorBytes unless lowered with SetMaxTensorBytes (the fuzz
// targets lower it so that a mutated shape cannot exhaust the fuzzer's memory).
inline std::atomic<int64_t>& MaxTensorBytesCap() {
  static std::atomic<int64_t> cap{kMaxTensorBytes};
  return cap;
}
inline int64_t MaxTensorBytes() { return MaxTensorBytesCap().load(std::memory_order_relaxed); }
inline void SetMaxTensorBytes(int64_t bytes) { MaxTensorBytesCap().store(bytes, std::memory_order_relaxed); }

// a * b, or InvalidArgument "<what>: a * b overflows int64".
inline absl::StatusOr<int64_t> CheckedMul(int64_t a, int64_t b, absl::string_view what) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", a, " * ", b, " overflows int64"));
  }
  return product;
}

// a + b, or InvalidArgument "<what>: a + b overflows int64".
inline absl::StatusOr<int64_t> CheckedAdd(int64_t a, int64_t b, absl::string_view what) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", a, " + ", b, " overflows int64"));
  }
  return sum;
}

// The element count of `dims`; InvalidArgument naming `what` and the shape when a dim
// is negative or the product of the non-zero dims overflows int64. Zero dims are left
// out of that check on purpose: then every partial product a kernel forms (strides,
// outer/inner sizes) fits int64 too, even for an empty tensor such as [0, 2^62, 8].
inline absl::StatusOr<int64_t> CheckedElementCount(absl::Span<const int64_t> dims, absl::string_view what) {
  int64_t nonzero_product = 1;
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " shape [", absl::StrJoin(dims, ","), "] has a negative dim"));
    }
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(nonzero_product, d, &nonzero_product)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " shape [", absl::StrJoin(dims, ","), "] overflows int64"));
    }
  }
  return empty ? 0 : nonzero_product;
}

// The byte count of `dims` elements of `element_size` bytes: CheckedElementCount plus
// ResourceExhausted when it exceeds MaxTensorBytes().
inline absl::StatusOr<int64_t> CheckedByteCount(absl::Span<const int64_t> dims, int64_t element_size,
                                                absl::string_view what) {
  absl::StatusOr<int64_t> count = CheckedElementCount(dims, what);
  if (!count.ok()) return count.status();
  int64_t bytes;
  const int64_t cap = MaxTensorBytes();
  if (__builtin_mul_overflow(*count, element_size, &bytes) || bytes > cap) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " shape [", absl::StrJoin(dims, ","), "] would need more than ",
        cap == kMaxTensorBytes ? std::string("1 TiB") : absl::StrCat(cap, " bytes")));
  }
  return bytes;
}

}  // namespace qfuse::base

#endif  // QFUSE_BASE_CHECKED_MATH_H_
