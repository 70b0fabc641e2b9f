#include "ir/type_inference.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/onnx_export.h"
#include "onnx/shape_inference/implementation.h"

namespace qfuse::ir {

absl::Status InferMissingTypes(Model* model) {
  bool missing = false;
  for (const Node* n : model->graph->nodes()) {
    for (const Value* out : n->outputs()) {
      if (out != nullptr && out->type().dtype == DataType::kUndefined) missing = true;
    }
  }
  if (!missing) return absl::OkStatus();
  ExportOptions options;
  options.opset = std::max(model->opset, kPerChannelQdqOpset);  // canonical forms are valid from 13
  options.run_checker = false;
  QFUSE_ASSIGN_OR_RETURN(onnx::ModelProto proto, ExportModel(*model, options));
  try {
    onnx::shape_inference::InferShapes(proto);
  } catch (const std::exception& e) {
    std::string what = e.what();
    return absl::InvalidArgumentError(absl::StrCat("shape inference: ", what.substr(0, what.find('\n'))));
  }
  for (const auto& vi : proto.graph().value_info()) {
    Value* v = model->graph->FindValue(vi.name());
    if (v == nullptr || v->type().dtype != DataType::kUndefined || !vi.type().has_tensor_type()) continue;
    const auto& tt = vi.type().tensor_type();
    absl::StatusOr<DataType> dtype = DataTypeFromOnnx(tt.elem_type());
    if (!dtype.ok()) continue;
    TensorType type;
    type.dtype = *dtype;
    if (tt.has_shape()) {
      type.shape.rank_known = true;
      for (const auto& d : tt.shape().dim()) {
        type.shape.dims.push_back(d.has_dim_value() ? Dim::Known(d.dim_value())
                                  : d.has_dim_param() ? Dim::Symbolic(d.dim_param())
                                                      : Dim{});
      }
    }
    v->mutable_type() = type;
  }
  return absl::OkStatus();
}

}  // namespace qfuse::ir
