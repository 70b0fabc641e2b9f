// A model: the graph plus the ONNX model-level metadata qfuse keeps across a round trip.
#ifndef QFUSE_IR_MODEL_H_
#define QFUSE_IR_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace qfuse::ir {

// Default-domain opsets qfuse imports. Export writes at least kMinExportOpset when a
// model needs per-channel QuantizeLinear/DequantizeLinear.
inline constexpr int64_t kMinImportOpset = 7;
inline constexpr int64_t kMaxImportOpset = 17;
inline constexpr int64_t kPerChannelQdqOpset = 13;

struct Model {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  int64_t opset = 0;       // default-domain opset the model was imported at
  int64_t ir_version = 0;  // ONNX IR version of the source file
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  std::string source_path;  // file it was loaded from, for messages; may be empty
  std::vector<std::string> notes;  // what import changed that the user should know (one line each)
};

}  // namespace qfuse::ir

#endif  // QFUSE_IR_MODEL_H_
