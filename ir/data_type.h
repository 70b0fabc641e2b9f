// Element types of qfuse tensors and their mapping to ONNX TensorProto data types.
#ifndef QFUSE_IR_DATA_TYPE_H_
#define QFUSE_IR_DATA_TYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace qfuse::ir {

// kFloat16 and kBFloat16 are stored bit patterns (uint16); kernels read them only
// through Cast. STRING and complex types are not supported anywhere in qfuse.
enum class DataType : int8_t {
  kUndefined = 0,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kBool,
};

// Bytes per element (kBool is one byte; kUndefined is 0).
size_t ElementSize(DataType type);

// Upper-case ONNX-style name, e.g. "FLOAT", "INT8".
std::string DataTypeName(DataType type);

// Maps an onnx::TensorProto_DataType value; STRING, complex and unknown codes fail.
absl::StatusOr<DataType> DataTypeFromOnnx(int32_t onnx_type);
int32_t DataTypeToOnnx(DataType type);

// Compile-time mapping from C++ element type to DataType.
template <typename T>
struct DataTypeOf;
template <> struct DataTypeOf<float> { static constexpr DataType value = DataType::kFloat32; };
template <> struct DataTypeOf<double> { static constexpr DataType value = DataType::kFloat64; };
template <> struct DataTypeOf<int8_t> { static constexpr DataType value = DataType::kInt8; };
template <> struct DataTypeOf<uint8_t> { static constexpr DataType value = DataType::kUint8; };
template <> struct DataTypeOf<int16_t> { static constexpr DataType value = DataType::kInt16; };
template <> struct DataTypeOf<uint16_t> { static constexpr DataType value = DataType::kUint16; };
template <> struct DataTypeOf<int32_t> { static constexpr DataType value = DataType::kInt32; };
template <> struct DataTypeOf<uint32_t> { static constexpr DataType value = DataType::kUint32; };
template <> struct DataTypeOf<int64_t> { static constexpr DataType value = DataType::kInt64; };
template <> struct DataTypeOf<uint64_t> { static constexpr DataType value = DataType::kUint64; };
template <> struct DataTypeOf<bool> { static constexpr DataType value = DataType::kBool; };

}  // namespace qfuse::ir

#endif  // QFUSE_IR_DATA_TYPE_H_
