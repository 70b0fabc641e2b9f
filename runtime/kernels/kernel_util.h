// Small helpers shared by kernels: axis normalisation, reading shape-like inputs,
// strides and numpy broadcasting of shapes.
#ifndef QFUSE_RUNTIME_KERNELS_KERNEL_UTIL_H_
#define QFUSE_RUNTIME_KERNELS_KERNEL_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/tensor.h"

namespace qfuse::runtime::kernels {

using ir::DataType;
using ir::Tensor;

// Maps axis in [-rank, rank) to [0, rank); anything else is an InvalidArgument error.
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);

// The values of an INT64 or INT32 tensor (scalar or 1-D), e.g. a shape or axes input.
absl::StatusOr<std::vector<int64_t>> ReadInt64s(const Tensor& t, const std::string& what);

// The single value of a FLOAT, DOUBLE or integer tensor, as float.
absl::StatusOr<float> ReadScalarAsFloat(const Tensor& t, const std::string& what);

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> Strides(absl::Span<const int64_t> dims);

// Numpy broadcast of two shapes; InvalidArgument naming both when incompatible.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(absl::Span<const int64_t> a, absl::Span<const int64_t> b);

// Strides of `dims` laid against `out_dims` (right-aligned), 0 on broadcast axes.
std::vector<int64_t> BroadcastStrides(absl::Span<const int64_t> dims, absl::Span<const int64_t> out_dims);

// Fails unless inputs[i] is present for every i < count.
absl::Status RequireInputs(absl::Span<const Tensor* const> inputs, size_t count);
// InvalidArgument "<what> types differ: A and B" unless a and b have one element type.
absl::Status RequireSameType(const Tensor& a, const Tensor& b, const char* what = "input");

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_KERNEL_UTIL_H_
