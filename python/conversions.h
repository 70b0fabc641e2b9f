// Conversions between Python objects and qfuse's C++ types for the Python module: a failed
// absl::Status as a Python exception, NumPy arrays to and from ir::Tensor, os.PathLike paths.
#ifndef QFUSE_PYTHON_CONVERSIONS_H_
#define QFUSE_PYTHON_CONVERSIONS_H_

#include <string>
#include <utility>

#include <pybind11/pybind11.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/data_type.h"
#include "ir/tensor.h"

namespace qfuse::python {

namespace py = pybind11;

// Raises the status as a Python exception carrying its message: ValueError for
// InvalidArgument, FileNotFoundError for NotFound, RuntimeError for any other code.
[[noreturn]] void ThrowStatus(const absl::Status& status);

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) ThrowStatus(value.status());
  return *std::move(value);
}

// Whether `obj` is a str or an os.PathLike; PathString returns os.fspath(obj).
bool IsPath(py::handle obj);
std::string PathString(py::handle obj);

// `array` (a NumPy array, or anything numpy.asarray accepts) as a new tensor of `dtype`
// (kUndefined: the array's own dtype) with the array's shape. Exactly one copy: the values
// are written once into the tensor's aligned buffer, NumPy converting the dtype
// ("same_kind" casting, e.g. float64 -> float32) and the layout in that same pass.
// `what` names the array in errors (ValueError / TypeError).
ir::Tensor TensorFromArray(py::handle array, ir::DataType dtype, const std::string& what);

// The tensor as a NumPy array over its own buffer (moved, not copied; the array owns it).
py::object ArrayFromTensor(ir::Tensor tensor);

}  // namespace qfuse::python

#endif  // QFUSE_PYTHON_CONVERSIONS_H_
