// ONNX -> qfuse IR: puts the nodes in order (node_order.h), widens float16 models to float32
// (float16_upcast.h), validates with onnx's checker, runs shape inference, turns Constant
// nodes into constants and normalises opset differences (see opset_forms.h).
#ifndef QFUSE_IR_ONNX_IMPORT_H_
#define QFUSE_IR_ONNX_IMPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/model.h"
#include "onnx/onnx_pb.h"

namespace qfuse::ir {

struct ImportOptions {
  bool run_checker = true;
  bool infer_shapes = true;
  // A FLOAT16 model is imported as FLOAT (float16_upcast.h), with a line in Model::notes.
  bool upcast_float16 = true;
};

// Loads `path`. External data is read only from files inside the model's folder.
absl::StatusOr<Model> LoadModel(const std::string& path, const ImportOptions& options = {});

// Imports an in-memory ModelProto. `model_dir` is where external data lives ("" when
// the model has none); `label` names the model in error messages.
absl::StatusOr<Model> ImportModel(onnx::ModelProto proto, const std::string& model_dir,
                                  const std::string& label, const ImportOptions& options = {});

}  // namespace qfuse::ir

#endif  // QFUSE_IR_ONNX_IMPORT_H_
