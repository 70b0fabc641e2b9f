#include "ir/tensor.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_join.h"

namespace qfuse::ir {
namespace {
// Cache-line alignment lets SIMD kernels use aligned loads on tensor starts.
constexpr size_t kTensorAlignment = 64;
}  // namespace

int64_t NumElements(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string DimsToString(absl::Span<const int64_t> dims) {
  return "[" + absl::StrJoin(dims, ",") + "]";
}

void Tensor::AlignedDeleter::operator()(uint8_t* p) const { std::free(p); }

Tensor::Tensor(DataType dtype, std::vector<int64_t> dims)
    : dtype_(dtype), dims_(std::move(dims)), num_elements_(NumElements(dims_)) {
  Allocate();
}

void Tensor::Allocate() {
  const size_t bytes = byte_size();
  // Round up so aligned_alloc's size is a multiple of the alignment; never zero.
  const size_t padded = ((bytes + kTensorAlignment - 1) / kTensorAlignment + 1) * kTensorAlignment;
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(kTensorAlignment, padded)));
  std::memset(data_.get(), 0, padded);
}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_), dims_(other.dims_), num_elements_(other.num_elements_) {
  if (other.data_ != nullptr) {
    Allocate();
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
