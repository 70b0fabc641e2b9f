#include "ir/tensor.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"

namespace qfuse::ir {
namespace {
// Cache-line alignment lets SIMD kernels use aligned loads on tensor starts.
constexpr size_t kTensorAlignment = 64;

// Freed buffers of 64 KiB and more are kept (up to 256 MiB in all) and handed out
// again for the same size: a runtime that allocates the same activations every run
// then touches warm memory instead of fresh pages the OS must zero and map each time.
class BufferCache {
 public:
  static BufferCache& Get() {
    static BufferCache* cache = new BufferCache();  // never destroyed: buffers outlive main
    return *cache;
  }
  uint8_t* Take(size_t bytes) {
    if (bytes >= kMinCached) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        uint8_t* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= bytes;
        return p;
      }
    }
    return static_cast<uint8_t*>(std::aligned_alloc(kTensorAlignment, bytes));
  }
  void Give(uint8_t* p, size_t bytes) {
    if (bytes >= kMinCached) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_bytes_ + bytes <= kMaxCached) {
        free_[bytes].push_back(p);
        cached_bytes_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  static constexpr size_t kMinCached = size_t{64} << 10;
  static constexpr size_t kMaxCached = size_t{256} << 20;
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<uint8_t*>> free_;
  size_t cached_bytes_ = 0;
};

size_t PaddedBytes(size_t bytes) {
  // A multiple of the alignment (aligned_alloc's rule) and never zero.
  return ((bytes + kTensorAlignment - 1) / kTensorAlignment + 1) * kTensorAlignment;
}
}  // namespace

int64_t NumElements(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string DimsToString(absl::Span<const int64_t> dims) {
  return "[" + absl::StrJoin(dims, ",") + "]";
}

void Tensor::AlignedDeleter::operator()(uint8_t* p) const {
  if (p != nullptr) BufferCache::Get().Give(p, bytes);
}

Tensor::Tensor(DataType dtype, std::vector<int64_t> dims)
    : dtype_(dtype), dims_(std::move(dims)), num_elements_(NumElements(dims_)) {
  Allocate();
}

Tensor Tensor::Uninitialized(DataType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.num_elements_ = NumElements(t.dims_);
  t.Allocate(/*zero=*/false);
  return t;
}

void Tensor::Allocate(bool zero) {
  const size_t padded = PaddedBytes(byte_size());
  data_ = std::unique_ptr<uint8_t[], AlignedDeleter>(BufferCache::Get().Take(padded), AlignedDeleter{padded});
  // Without `zero`, only the alignment padding past the elements is cleared.
  const size_t from = zero ? 0 : byte_size();
  std::memset(data_.get() + from, 0, padded - from);
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

void Tensor::SetDims(std::vector<int64_t> dims) { dims_ = std::move(dims); }

bool Tensor::BitwiseEqual(const Tensor& other) const {
  if (dtype_ != other.dtype_ || dims_ != other.dims_) return false;
  if (byte_size() == 0) return true;
  return std::memcmp(raw_data(), other.raw_data(), byte_size()) == 0;
}

}  // namespace qfuse::ir
