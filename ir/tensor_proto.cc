#include "ir/tensor_proto.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/checked_math.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace qfuse::ir {
namespace {

// Copies a repeated proto field into the tensor, narrowing each element to T.
template <typename T, typename Field>
absl::Status CopyTypedField(const Field& field, Tensor* tensor, const std::string& what) {
  if (static_cast<int64_t>(field.size()) != tensor->num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", what, "': has ", field.size(),
                                                   " values for shape ", DimsToString(tensor->dims())));
  }
  T* out = tensor->data<T>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& what) {
  if (proto.has_segment()) {
    return absl::UnimplementedError(absl::StrCat("tensor '", what, "': segmented tensors are not supported"));
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return absl::InternalError(absl::StrCat("tensor '", what, "': external data was not resolved"));
  }
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(proto.data_type());
  if (!dtype.ok()) {
    return absl::Status(dtype.status().code(), absl::StrCat("tensor '", what, "': ", dtype.status().message()));
  }
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  const std::string name = absl::StrCat("tensor '", what, "'");
  // The data must be there before anything is allocated for it: a shape such as
  // [2^62 + 196, 4] wraps int64, and a large shape without data is not a tensor.
  QFUSE_ASSIGN_OR_RETURN(const int64_t bytes, base::CheckedByteCount(dims, ElementSize(*dtype), name));
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != bytes) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": raw_data has ", proto.raw_data().size(),
                                                     " bytes, expected ", bytes, " for ", DataTypeName(*dtype),
                                                     DimsToString(dims)));
    }
  } else {
    const int64_t values = std::max({proto.float_data_size(), proto.double_data_size(), proto.int64_data_size(),
                                     proto.uint64_data_size(), proto.int32_data_size()});
    const int64_t count = ElementSize(*dtype) == 0 ? 0 : bytes / static_cast<int64_t>(ElementSize(*dtype));
    if (values != count) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": has ", values, " values for shape ", DimsToString(dims)));
    }
  }
  QFUSE_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Create(*dtype, dims, "initializer"));
  if (proto.has_raw_data()) {
    if (tensor.byte_size() > 0) std::memcpy(tensor.raw_data(), proto.raw_data().data(), tensor.byte_size());
    return tensor;
  }
  switch (*dtype) {
    case DataType::kFloat32:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<float>(proto.float_data(), &tensor, what));
      break;
    case DataType::kFloat64:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<double>(proto.double_data(), &tensor, what));
      break;
    case DataType::kInt64:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<int64_t>(proto.int64_data(), &tensor, what));
      break;
    case DataType::kUint32:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<uint32_t>(proto.uint64_data(), &tensor, what));
      break;
    case DataType::kUint64:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<uint64_t>(proto.uint64_data(), &tensor, what));
      break;
    case DataType::kInt32:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<int32_t>(proto.int32_data(), &tensor, what));
      break;
    case DataType::kInt16:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<int16_t>(proto.int32_data(), &tensor, what));
      break;
    case DataType::kInt8:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<int8_t>(proto.int32_data(), &tensor, what));
      break;
    case DataType::kUint8:
    case DataType::kBool:
      QFUSE_RETURN_IF_ERROR(CopyTypedField<uint8_t>(proto.int32_data(), &tensor, what));
      break;
    case DataType::kUint16:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      // 16-bit floats are kept as their bit patterns in int32_data.
      QFUSE_RETURN_IF_ERROR(CopyTypedField<uint16_t>(proto.int32_data(), &tensor, what));
      break;
    case DataType::kUndefined:
      return absl::InvalidArgumentError(absl::StrCat("tensor '", what, "': undefined data type"));
  }
  return tensor;
}

void TensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  proto->Clear();
  if (!name.empty()) proto->set_name(name);
  proto->set_data_type(DataTypeToOnnx(tensor.dtype()));
  for (int64_t d : tensor.dims()) proto->add_dims(d);
  proto->set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.byte_size()));
}

absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path) {
  QFUSE_ASSIGN_OR_RETURN(std::string bytes, base::ReadFileToString(path));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a serialized onnx.TensorProto"));
  }
  absl::StatusOr<Tensor> tensor = TensorFromProto(proto, proto.name());
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(), absl::StrCat(path, ": ", tensor.status().message()));
  }
  return NamedTensor{proto.name(), *std::move(tensor)};
}

absl::Status WriteTensorFile(const Tensor& tensor, const std::string& name, const std::string& path) {
  onnx::TensorProto proto;
  TensorToProto(tensor, name, &proto);
  return base::WriteFileAtomically(path, proto.SerializeAsString());
}

}  // namespace qfuse::ir
