#include "python/conversions.h"

#include <cstdint>
#include <vector>

#include <pybind11/numpy.h>

#include "absl/strings/str_cat.h"

namespace qfuse::python {
namespace {

// qfuse element types and the NumPy dtypes that hold them. BFLOAT16 has no NumPy type: its
// bit patterns travel as uint16 (as ir::Tensor stores them).
struct DtypeName {
  ir::DataType type;
  const char* numpy;
};
constexpr DtypeName kDtypes[] = {
    {ir::DataType::kFloat32, "float32"}, {ir::DataType::kFloat64, "float64"}, {ir::DataType::kFloat16, "float16"},
    {ir::DataType::kInt8, "int8"},       {ir::DataType::kUint8, "uint8"},     {ir::DataType::kInt16, "int16"},
    {ir::DataType::kUint16, "uint16"},   {ir::DataType::kInt32, "int32"},     {ir::DataType::kUint32, "uint32"},
    {ir::DataType::kInt64, "int64"},     {ir::DataType::kUint64, "uint64"},   {ir::DataType::kBool, "bool"},
    {ir::DataType::kBFloat16, "uint16"},
};

py::dtype NumpyDtype(py::module_& numpy, ir::DataType type) {
  for (const DtypeName& d : kDtypes) {
    if (d.type == type) return py::reinterpret_borrow<py::dtype>(numpy.attr("dtype")(d.numpy));
  }
  throw py::type_error(absl::StrCat("qfuse tensor type ", ir::DataTypeName(type), " has no NumPy dtype"));
}

}  // namespace

void ThrowStatus(const absl::Status& status) {
  PyObject* type = PyExc_RuntimeError;
  if (status.code() == absl::StatusCode::kInvalidArgument) type = PyExc_ValueError;
  if (status.code() == absl::StatusCode::kNotFound) type = PyExc_FileNotFoundError;
  PyErr_SetString(type, std::string(status.message()).c_str());
  throw py::error_already_set();
}

bool IsPath(py::handle obj) { return py::isinstance<py::str>(obj) || py::hasattr(obj, "__fspath__"); }

std::string PathString(py::handle obj) {
  return py::module_::import("os").attr("fspath")(obj).cast<std::string>();
}

ir::Tensor TensorFromArray(py::handle array, ir::DataType dtype, const std::string& what) {
  py::module_ numpy = py::module_::import("numpy");
  py::object source = numpy.attr("asarray")(array);
  if (dtype == ir::DataType::kUndefined) {
    const std::string name = py::str(source.attr("dtype").attr("name"));
    for (const DtypeName& d : kDtypes) {
      if (name == d.numpy) {
        dtype = d.type;
        break;
      }
    }
    if (dtype == ir::DataType::kUndefined) throw py::type_error(absl::StrCat(what, ": NumPy dtype ", name, " is not supported"));
  }
  std::vector<int64_t> dims;
  for (py::handle d : py::tuple(source.attr("shape"))) dims.push_back(d.cast<int64_t>());
  ir::Tensor tensor = ValueOrThrow(ir::Tensor::CreateUninitialized(dtype, dims, what.c_str()));
  // A NumPy view of the tensor's buffer (the capsule base keeps NumPy from copying it),
  // filled by numpy.copyto: the one copy, with the dtype and layout conversion.
  std::vector<py::ssize_t> shape(dims.begin(), dims.end());
  py::array view(NumpyDtype(numpy, dtype), shape, {}, tensor.raw_data(), py::capsule(tensor.raw_data(), [](void*) {}));
  try {
    numpy.attr("copyto")(view, source, py::arg("casting") = "same_kind");
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError)) throw;
    const std::string message = absl::StrCat(what, ": ", std::string(py::str(e.value())));
    if (e.matches(PyExc_TypeError)) throw py::type_error(message);
    throw py::value_error(message);
  }
  return tensor;
}

py::object ArrayFromTensor(ir::Tensor tensor) {
  py::module_ numpy = py::module_::import("numpy");
  auto* owned = new ir::Tensor(std::move(tensor));
  py::capsule base(owned, [](void* p) { delete static_cast<ir::Tensor*>(p); });
  std::vector<py::ssize_t> shape(owned->dims().begin(), owned->dims().end());
  return py::array(NumpyDtype(numpy, owned->dtype()), shape, {}, owned->raw_data(), base);
}

}  // namespace qfuse::python
