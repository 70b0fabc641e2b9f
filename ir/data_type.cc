#include "ir/data_type.h"

#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"

namespace qfuse::ir {

size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kUndefined: return 0;
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kBool: return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt16:
    case DataType::kUint16: return 2;
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kUint32: return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
    case DataType::kUint64: return 8;
  }
  return 0;
}

std::string DataTypeName(DataType type) {
  switch (type) {
    case DataType::kUndefined: return "UNDEFINED";
    case DataType::kFloat32: return "FLOAT";
    case DataType::kFloat16: return "FLOAT16";
    case DataType::kBFloat16: return "BFLOAT16";
    case DataType::kFloat64: return "DOUBLE";
    case DataType::kInt8: return "INT8";
    case DataType::kUint8: return "UINT8";
    case DataType::kInt16: return "INT16";
    case DataType::kUint16: return "UINT16";
    case DataType::kInt32: return "INT32";
    case DataType::kUint32: return "UINT32";
    case DataType::kInt64: return "INT64";
    case DataType::kUint64: return "UINT64";
    case DataType::kBool: return "BOOL";
  }
  return "UNDEFINED";
}

absl::StatusOr<DataType> DataTypeFromOnnx(int32_t onnx_type) {
  using onnx::TensorProto;
  switch (onnx_type) {
    case TensorProto::FLOAT: return DataType::kFloat32;
    case TensorProto::FLOAT16: return DataType::kFloat16;
    case TensorProto::BFLOAT16: return DataType::kBFloat16;
    case TensorProto::DOUBLE: return DataType::kFloat64;
    case TensorProto::INT8: return DataType::kInt8;
    case TensorProto::UINT8: return DataType::kUint8;
    case TensorProto::INT16: return DataType::kInt16;
    case TensorProto::UINT16: return DataType::kUint16;
    case TensorProto::INT32: return DataType::kInt32;
    case TensorProto::UINT32: return DataType::kUint32;
    case TensorProto::INT64: return DataType::kInt64;
    case TensorProto::UINT64: return DataType::kUint64;
    case TensorProto::BOOL: return DataType::kBool;
    case TensorProto::STRING:
      return absl::UnimplementedError("STRING tensors are not supported");
    case TensorProto::COMPLEX64:
    case TensorProto::COMPLEX128:
      return absl::UnimplementedError("complex tensors are not supported");
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown ONNX data type ", onnx_type));
  }
}

int32_t DataTypeToOnnx(DataType type) {
  using onnx::TensorProto;
  switch (type) {
    case DataType::kUndefined: return TensorProto::UNDEFINED;
    case DataType::kFloat32: return TensorProto::FLOAT;
    case DataType::kFloat16: return TensorProto::FLOAT16;
    case DataType::kBFloat16: return TensorProto::BFLOAT16;
    case DataType::kFloat64: return TensorProto::DOUBLE;
    case DataType::kInt8: return TensorProto::INT8;
    case DataType::kUint8: return TensorProto::UINT8;
    case DataType::kInt16: return TensorProto::INT16;
    case DataType::kUint16: return TensorProto::UINT16;
    case DataType::kInt32: return TensorProto::INT32;
    case DataType::kUint32: return TensorProto::UINT32;
    case DataType::kInt64: return TensorProto::INT64;
    case DataType::kUint64: return TensorProto::UINT64;
    case DataType::kBool: return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

}  // namespace qfuse::ir
