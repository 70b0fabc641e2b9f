// Fills in the types of values that have none (e.g. made by a rewrite) by running
// ONNX shape inference on the exported graph.
#ifndef QFUSE_IR_TYPE_INFERENCE_H_
#define QFUSE_IR_TYPE_INFERENCE_H_

#include "absl/status/status.h"
#include "ir/model.h"

namespace qfuse::ir {

// Values whose dtype is undefined get ONNX's inferred type (a value it cannot infer
// stays undefined). Types already known are left untouched.
absl::Status InferMissingTypes(Model* model);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_TYPE_INFERENCE_H_
