// Conversion between onnx::TensorProto and qfuse::ir::Tensor, and .pb file I/O for
// tensors in the ONNX test-data layout.
#ifndef QFUSE_IR_TENSOR_PROTO_H_
#define QFUSE_IR_TENSOR_PROTO_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace qfuse::ir {

// Reads typed fields or raw_data (little-endian). External data must already have
// been resolved into raw_data (see onnx_import.h). `what` names the tensor in errors.
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& what);

// Writes dims, data_type and raw_data (every numeric type as raw little-endian bytes).
void TensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

// Reads a serialized TensorProto file (input_0.pb ...); returns the tensor and its name.
absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path);
// Writes atomically (temp file + rename).
absl::Status WriteTensorFile(const Tensor& tensor, const std::string& name, const std::string& path);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_TENSOR_PROTO_H_
