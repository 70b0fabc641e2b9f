// A float16 model imported as float32: what an int8 model is made from. Converters such as
// onnxconverter-common's float16 pass (keep_io_types) write models whose weights and
// activations are FLOAT16 between Casts at the graph's inputs and outputs; onnxruntime runs
// them, qfuse's kernels compute in FLOAT, and the int8 model's scales and biases are float32
// either way.
#ifndef QFUSE_IR_FLOAT16_UPCAST_H_
#define QFUSE_IR_FLOAT16_UPCAST_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace qfuse::ir {

// What UpcastFloat16 changed.
struct Float16Upcast {
  int64_t tensors = 0;          // initializers and tensor attributes (Constant, ConstantOfShape, ...)
  int64_t type_attrs = 0;       // Cast's `to`, `dtype` attributes (RandomNormal, EyeLike, ...)
  int64_t values = 0;           // value_info entries (and subgraphs' inputs and outputs)
  int64_t interface_casts = 0;  // Casts added so that FLOAT16 graph inputs and outputs stay FLOAT16
  bool changed() const { return tensors + type_attrs + values + interface_casts > 0; }
  // One line for the user: "FLOAT16 model imported as FLOAT (...): 238 tensors widened, ...".
  std::string Describe() const;
};

// Turns every FLOAT16 of `graph` and its subgraphs into FLOAT: tensor data widened exactly
// (ir/float16.h), Casts and dtype attributes to FLOAT16 retargeted to FLOAT, value types
// changed. The computation is then the float32 one of the same weights (the float16
// rounding between ops is gone). The graph's own FLOAT16 inputs and outputs keep their type:
// a Cast to FLOAT follows each such input and a Cast to FLOAT16 ends each such output, so the
// model's interface, and an int8 model made from it, is the user's. Fails on a FLOAT16 tensor
// whose data is malformed.
absl::Status UpcastFloat16(onnx::GraphProto* graph, Float16Upcast* changes);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_FLOAT16_UPCAST_H_
