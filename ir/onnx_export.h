// qfuse IR -> ONNX ModelProto that passes onnx's checker, at the model's opset or a
// raised one (per-channel QuantizeLinear/DequantizeLinear need opset 13).
#ifndef QFUSE_IR_ONNX_EXPORT_H_
#define QFUSE_IR_ONNX_EXPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/model.h"
#include "onnx/onnx_pb.h"

namespace qfuse::ir {

struct ExportOptions {
  // Target default-domain opset; 0 means the model's own opset, raised to 13 when
  // the graph holds per-channel QuantizeLinear/DequantizeLinear.
  int64_t opset = 0;
  bool run_checker = true;
};

// The opset Export would write for `model` with `options`.
int64_t ExportOpset(const Model& model, const ExportOptions& options);

absl::StatusOr<onnx::ModelProto> ExportModel(const Model& model, const ExportOptions& options = {});

// Exports and writes atomically. Refuses to overwrite the model's own source file.
absl::Status SaveModel(const Model& model, const std::string& path, const ExportOptions& options = {});

}  // namespace qfuse::ir

#endif  // QFUSE_IR_ONNX_EXPORT_H_
