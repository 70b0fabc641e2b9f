// Runtime-dtype to C++-type dispatch for the elementwise kernels.
#ifndef QFUSE_RUNTIME_KERNELS_ELEMENTWISE_DISPATCH_H_
#define QFUSE_RUNTIME_KERNELS_ELEMENTWISE_DISPATCH_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/data_type.h"

namespace qfuse::runtime::kernels {

// Calls f(T{}) for the C++ type T of a real numeric dtype (no BOOL or 16-bit floats).
template <typename F>
absl::Status DispatchNumeric(ir::DataType t, const std::string& what, F&& f) {
  using ir::DataType;
  switch (t) {
    case DataType::kFloat32: return f(float{});
    case DataType::kFloat64: return f(double{});
    case DataType::kInt8: return f(int8_t{});
    case DataType::kUint8: return f(uint8_t{});
    case DataType::kInt16: return f(int16_t{});
    case DataType::kUint16: return f(uint16_t{});
    case DataType::kInt32: return f(int32_t{});
    case DataType::kUint32: return f(uint32_t{});
    case DataType::kInt64: return f(int64_t{});
    case DataType::kUint64: return f(uint64_t{});
    default:
      return absl::UnimplementedError(absl::StrCat(what, ": unsupported type ", ir::DataTypeName(t)));
  }
}

// Calls f(T{}) for FLOAT or DOUBLE.
template <typename F>
absl::Status DispatchFloat(ir::DataType t, const std::string& what, F&& f) {
  switch (t) {
    case ir::DataType::kFloat32: return f(float{});
    case ir::DataType::kFloat64: return f(double{});
    default:
      return absl::UnimplementedError(absl::StrCat(what, ": unsupported type ", ir::DataTypeName(t)));
  }
}

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_ELEMENTWISE_DISPATCH_H_
