#include "ir/tensor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_math.h"

namespace qfuse::ir {
namespace {
// Cache-line alignment lets SIMD kernels use aligned loads on tensor starts.
constexpr size_t kTensorAlignment = 64;

// Freed buffers of 64 KiB and more are kept (while the kept and the handed-out ones together stay
// within 256 MiB plus the most bytes of such buffers handed out at once since the last
// TrimTensorBufferCache) and handed out again
// for a request of their size or down to 1/kMaxReuseRatio of it (the smallest that fits): a
// runtime that allocates the same activations every run then touches warm memory instead of
// fresh pages the OS must zero and map each time, and one cached buffer serves the many sizes
// of a network's layers instead of one buffer being kept per size. The ratio bounds how much
// of a buffer a small tensor can hold idle. Peak memory of `tools/run --bench` at batch 16,
// 224x224, with ratio 2 -> 8: MobileNetV2 fp32 296 -> 230 MiB, ResNet-18 fp32 260 -> 242 MiB,
// at the same speed (docs/performance.md, fifteenth session). The bound grows with the process's
// own peak because a fixed one made large batches fault in fresh pages on every run: PaddleOCR's
// 320x320 detector at batch 32 (325 MiB of activations) ran 3.6x slower per sample than at
// batch 8 (docs/performance.md, twenty-fifth session). The last live executor trims the cache to the
// fixed bound when it goes, so one phase's large batches do not stay cached for the next.
class BufferCache {
 public:
  static BufferCache& Get() {
    static BufferCache* cache = new BufferCache();  // never destroyed: buffers outlive main
    return *cache;
  }
  // A buffer of at least `bytes`; *capacity is its real size (what Give takes back).
  uint8_t* Take(size_t bytes, size_t* capacity) {
    *capacity = bytes;
    if (bytes >= kMinCached) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.lower_bound(bytes);
      if (it != free_.end() && it->first / kMaxReuseRatio <= bytes) {
        uint8_t* p = it->second;
        *capacity = it->first;
        cached_bytes_ -= it->first;
        free_.erase(it);
        Hold(*capacity);
        return p;
      }
      uint8_t* p = static_cast<uint8_t*>(std::aligned_alloc(kTensorAlignment, bytes));
      if (p != nullptr) Hold(bytes);
      return p;
    }
    return static_cast<uint8_t*>(std::aligned_alloc(kTensorAlignment, bytes));
  }
  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_bytes_;
  }
  void Trim() {
    std::lock_guard<std::mutex> lock(mu_);
    while (cached_bytes_ > kMaxCached) {  // the largest first
      auto last = std::prev(free_.end());
      cached_bytes_ -= last->first;
      std::free(last->second);
      free_.erase(last);
    }
    peak_held_bytes_ = held_bytes_;
  }
  void Give(uint8_t* p, size_t bytes) {
    if (bytes >= kMinCached) {
      std::lock_guard<std::mutex> lock(mu_);
      held_bytes_ -= bytes;
      // Over the bound, smaller kept buffers make room first: a larger one serves more sizes.
      const size_t bound = peak_held_bytes_ + kMaxCached;
      while (held_bytes_ + cached_bytes_ + bytes > bound && !free_.empty() && free_.begin()->first < bytes) {
        cached_bytes_ -= free_.begin()->first;
        std::free(free_.begin()->second);
        free_.erase(free_.begin());
      }
      if (held_bytes_ + cached_bytes_ + bytes <= bound) {
        free_.emplace(bytes, p);
        cached_bytes_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  static constexpr size_t kMinCached = size_t{64} << 10;
  static constexpr size_t kMaxReuseRatio = 8;
  static constexpr size_t kMaxCached = size_t{256} << 20;
  // Under mu_: a buffer of `bytes` handed out.
  void Hold(size_t bytes) {
    held_bytes_ += bytes;
    peak_held_bytes_ = std::max(peak_held_bytes_, held_bytes_);
  }
  std::mutex mu_;
  std::multimap<size_t, uint8_t*> free_;  // capacity -> buffer
  size_t cached_bytes_ = 0;
  size_t held_bytes_ = 0;       // buffers of kMinCached bytes or more handed out and not given back
  size_t peak_held_bytes_ = 0;  // the most held_bytes_ has been
};

size_t PaddedBytes(size_t bytes) {
  // A multiple of the alignment (aligned_alloc's rule) and never zero.
  return ((bytes + kTensorAlignment - 1) / kTensorAlignment + 1) * kTensorAlignment;
}
}  // namespace

void TrimTensorBufferCache() { BufferCache::Get().Trim(); }
size_t CachedTensorBufferBytes() { return BufferCache::Get().cached_bytes(); }

int64_t NumElements(absl::Span<const int64_t> dims) {
  absl::StatusOr<int64_t> n = base::CheckedElementCount(dims, "tensor");
  if (!n.ok()) {
    // A caller skipped the check on a shape from data: stop before the wrapped count
    // describes memory that does not exist.
    std::fprintf(stderr, "qfuse: internal error: %s\n", std::string(n.status().message()).c_str());
    std::abort();
  }
  return *n;
}

std::string DimsToString(absl::Span<const int64_t> dims) {
  return "[" + absl::StrJoin(dims, ",") + "]";
}

void Tensor::AlignedDeleter::operator()(uint8_t* p) const {
  if (p != nullptr) BufferCache::Get().Give(p, bytes);
}

Tensor::Tensor(DataType dtype, std::vector<int64_t> dims)
    : dtype_(dtype), dims_(std::move(dims)), num_elements_(NumElements(dims_)) {
  if (!Allocate()) {
    std::fprintf(stderr, "qfuse: out of memory for a tensor of %s\n", DimsToString(dims_).c_str());
    std::abort();
  }
}

Tensor Tensor::Uninitialized(DataType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.num_elements_ = NumElements(t.dims_);
  if (!t.Allocate(/*zero=*/false)) {
    std::fprintf(stderr, "qfuse: out of memory for a tensor of %s\n", DimsToString(t.dims_).c_str());
    std::abort();
  }
  return t;
}

absl::StatusOr<Tensor> Tensor::CreateChecked(DataType dtype, std::vector<int64_t> dims, const char* what,
                                             bool zero) {
  absl::StatusOr<int64_t> bytes = base::CheckedByteCount(dims, static_cast<int64_t>(ElementSize(dtype)), what);
  if (!bytes.ok()) return bytes.status();
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.num_elements_ = NumElements(t.dims_);
  if (!t.Allocate(zero)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " shape ", DimsToString(t.dims_), ": out of memory (", *bytes, " bytes)"));
  }
  return t;
}

absl::StatusOr<Tensor> Tensor::Create(DataType dtype, std::vector<int64_t> dims, const char* what) {
  return CreateChecked(dtype, std::move(dims), what, /*zero=*/true);
}

absl::StatusOr<Tensor> Tensor::CreateUninitialized(DataType dtype, std::vector<int64_t> dims, const char* what) {
  return CreateChecked(dtype, std::move(dims), what, /*zero=*/false);
}

bool Tensor::Allocate(bool zero) {
  const size_t padded = PaddedBytes(byte_size());
  size_t capacity = 0;
  uint8_t* p = BufferCache::Get().Take(padded, &capacity);
  if (p == nullptr) return false;
  data_ = std::unique_ptr<uint8_t[], AlignedDeleter>(p, AlignedDeleter{capacity});
  // Without `zero`, only the alignment padding past the elements is cleared.
  const size_t from = zero ? 0 : byte_size();
  std::memset(data_.get() + from, 0, padded - from);
  return true;
}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_), dims_(other.dims_), num_elements_(other.num_elements_) {
  if (other.data_ != nullptr) {
    Allocate(/*zero=*/false);
    std::memcpy(data_.get(), other.data_.get(), byte_size());
  }
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    Tensor copy(other);
    *this = std::move(copy);
  }
  return *this;
}

absl::Status Tensor::SetDims(std::vector<int64_t> dims) {
  absl::StatusOr<int64_t> count = base::CheckedElementCount(dims, "new");
  if (!count.ok()) return count.status();
  if (*count != num_elements_) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", DimsToString(dims), " has ", *count,
                                                   " elements, the tensor ", num_elements_));
  }
  dims_ = std::move(dims);
  return absl::OkStatus();
}

bool Tensor::BitwiseEqual(const Tensor& other) const {
  if (dtype_ != other.dtype_ || dims_ != other.dims_) return false;
  if (byte_size() == 0) return true;
  return std::memcmp(raw_data(), other.raw_data(), byte_size()) == 0;
}

}  // namespace qfuse::ir
