// A dense, owned, row-major n-d array with an element type: weights, constants and
// runtime activations are all qfuse::ir::Tensor.
#ifndef QFUSE_IR_TENSOR_H_
#define QFUSE_IR_TENSOR_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/data_type.h"

namespace qfuse::ir {

// Product of `dims` (1 for a scalar, 0 if any dim is 0). Dims must be >= 0 and the
// product must fit int64; shapes from files, attributes or tensor values are checked
// first with CheckedElementCount (ir/checked_math.h), and a violation here aborts.
int64_t NumElements(absl::Span<const int64_t> dims);

// "[2,3,4]".
std::string DimsToString(absl::Span<const int64_t> dims);

class Tensor {
 public:
  // An empty FLOAT scalar-less tensor (dtype kUndefined, no data).
  Tensor() = default;
  // Zero-initialised tensor of the given type and shape. The shape must be valid
  // (see NumElements); a shape that comes from data goes through Create.
  Tensor(DataType dtype, std::vector<int64_t> dims);
  // A tensor whose contents are unspecified, for kernels that write every element
  // (saves the zero-fill pass over large activations).
  static Tensor Uninitialized(DataType dtype, std::vector<int64_t> dims);

  // The checked forms: InvalidArgument for a negative dim or an element count that
  // overflows int64, ResourceExhausted beyond ir::kMaxTensorBytes or when the
  // allocation fails. Kernels make their outputs with these. `what` names the tensor.
  static absl::StatusOr<Tensor> Create(DataType dtype, std::vector<int64_t> dims,
                                       const char* what = "tensor");
  static absl::StatusOr<Tensor> CreateUninitialized(DataType dtype, std::vector<int64_t> dims,
                                                    const char* what = "tensor");

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept = default;
  Tensor& operator=(Tensor&& other) noexcept = default;

  // Builds a tensor from values; values.size() must equal NumElements(dims).
  template <typename T>
  static Tensor FromVector(std::vector<int64_t> dims, absl::Span<const T> values) {
    Tensor t(DataTypeOf<T>::value, std::move(dims));
    if (!values.empty()) std::memcpy(t.raw_data(), values.data(), t.byte_size());
    return t;
  }
  template <typename T>
  static Tensor Scalar(T value) {
    return FromVector<T>({}, absl::Span<const T>(&value, 1));
  }

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t byte_size() const { return num_elements_ * ElementSize(dtype_); }

  // Typed access; T must match dtype() (checked only in debug builds).
  template <typename T>
  T* data() { return reinterpret_cast<T*>(data_.get()); }
  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(data_.get()); }
  template <typename T>
  absl::Span<const T> values() const { return {data<T>(), static_cast<size_t>(num_elements_)}; }
  template <typename T>
  absl::Span<T> mutable_values() { return {data<T>(), static_cast<size_t>(num_elements_)}; }

  void* raw_data() { return data_.get(); }
  const void* raw_data() const { return data_.get(); }

  // Changes the shape to one with the same element count (no data movement);
  // InvalidArgument, and no change, when the counts differ or `dims` overflows.
  absl::Status SetDims(std::vector<int64_t> dims);

  // Relabels the element type; `dtype` must have the same element size (used for
  // files that store BFLOAT16 bit patterns as UINT16).
  void ReinterpretAs(DataType dtype) { dtype_ = dtype; }

  // Same dtype, dims and bytes.
  bool BitwiseEqual(const Tensor& other) const;

 private:
  struct AlignedDeleter {
    AlignedDeleter() noexcept : bytes(0) {}
    explicit AlignedDeleter(size_t allocation_bytes) noexcept : bytes(allocation_bytes) {}
    void operator()(uint8_t* p) const;
    size_t bytes;  // allocation size, for the buffer cache
  };
  // Allocates the buffer; false (and no buffer) when the allocator fails.
  bool Allocate(bool zero = true);
  static absl::StatusOr<Tensor> CreateChecked(DataType dtype, std::vector<int64_t> dims, const char* what,
                                              bool zero);

  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 0;
  std::unique_ptr<uint8_t[], AlignedDeleter> data_;
};

// Tensor buffers of 64 KiB and more, once freed, are kept for reuse (tensor.cc) while the kept
// and the live ones together stay within 256 MiB plus the most live bytes so far. This gives
// back what is kept beyond 256 MiB and restarts that peak; the last live executor calls it when it goes.
void TrimTensorBufferCache();
// Bytes of the freed buffers kept for reuse.
size_t CachedTensorBufferBytes();

// A tensor with the name of the graph value it binds to (a graph input or output, a file's
// TensorProto name).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

}  // namespace qfuse::ir

#endif  // QFUSE_IR_TENSOR_H_
