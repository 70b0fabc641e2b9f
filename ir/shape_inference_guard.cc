#include "ir/shape_inference_guard.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace qfuse::ir {
namespace {

// The input index of the weights of a Conv-family op, or -1.
int WeightInput(const std::string& op) {
  if (op == "Conv" || op == "ConvTranspose" || op == "ConvInteger") return 1;
  if (op == "QLinearConv") return 3;
  return -1;
}

bool HasAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

}  // namespace

absl::Status GuardShapeInference(onnx::GraphProto* graph) {
  absl::flat_hash_map<std::string, std::vector<int64_t>> static_dims;
  for (const onnx::TensorProto& init : graph->initializer()) {
    static_dims[init.name()] = std::vector<int64_t>(init.dims().begin(), init.dims().end());
  }
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    const std::string& op = node.op_type();
    if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
    if (op == "Constant" && node.output_size() == 1) {
      for (const onnx::AttributeProto& a : node.attribute()) {
        if (a.name() == "value" && a.has_t()) {
          static_dims[node.output(0)] = std::vector<int64_t>(a.t().dims().begin(), a.t().dims().end());
        }
      }
      continue;
    }
    if ((op == "DequantizeLinear" || op == "QuantizeLinear" || op == "Cast" || op == "Identity") &&
        node.input_size() > 0 && node.output_size() > 0) {
      auto it = static_dims.find(node.input(0));
      if (it != static_dims.end()) {
        std::vector<int64_t> dims = it->second;  // copied: inserting may rehash the map
        static_dims[node.output(0)] = std::move(dims);
      }
      continue;
    }
    const int w = WeightInput(op);
    if (w < 0 || node.input_size() <= w || HasAttribute(node, "kernel_shape")) continue;
    auto it = static_dims.find(node.input(w));
    if (it == static_dims.end()) continue;
    const std::vector<int64_t>& dims = it->second;
    if (dims.size() < 3) {
      return absl::InvalidArgumentError(absl::StrCat("node '", node.name(), "' (", op, "): weights '", node.input(w),
                                                     "' have ", dims.size(), " dims, expected at least 3"));
    }
    onnx::AttributeProto* kernel_shape = node.add_attribute();
    kernel_shape->set_name("kernel_shape");
    kernel_shape->set_type(onnx::AttributeProto::INTS);
    for (size_t i = 2; i < dims.size(); ++i) kernel_shape->add_ints(dims[i]);
  }
  return absl::OkStatus();
}

}  // namespace qfuse::ir
