#include "ir/onnx_import.h"

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "ir/float16_upcast.h"
#include "ir/node_order.h"
#include "ir/opset_forms.h"
#include "ir/shape_inference_guard.h"
#include "ir/tensor_proto.h"
#include "ir/type_inference.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

namespace qfuse::ir {
namespace {

namespace fs = std::filesystem;

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// Prefixes a status message with the model label.
absl::Status Annotate(const absl::Status& status, const std::string& label) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(label, ": ", status.message()));
}

// `text` on one line: line breaks and the indentation after them become one space (the
// checker's messages spill the offending node over several lines).
std::string OneLine(std::string_view text) {
  std::string line;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !line.empty();
      continue;
    }
    if (space) line.push_back(' ');
    space = false;
    line.push_back(c);
  }
  return line;
}

// Graph inputs and outputs with a negative dim, and graphs with no outputs, are refused:
// the ONNX checker accepts both.
absl::Status CheckGraphInterface(const onnx::GraphProto& graph) {
  if (graph.output_size() == 0) return absl::InvalidArgumentError("the graph has no outputs");
  for (const auto* list : {&graph.input(), &graph.output()}) {
    for (const onnx::ValueInfoProto& info : *list) {
      if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) continue;
      for (const onnx::TensorShapeProto::Dimension& d : info.type().tensor_type().shape().dim()) {
        if (d.has_dim_value() && d.dim_value() < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(list == &graph.input() ? "input '" : "output '", info.name(), "' has negative dim ",
                           d.dim_value()));
        }
      }
    }
  }
  return absl::OkStatus();
}

// Replaces external-data references with raw_data read from files under model_dir.
absl::Status ResolveExternalData(onnx::TensorProto* tensor, const std::string& model_dir) {
  if (tensor->data_location() != onnx::TensorProto::EXTERNAL) return absl::OkStatus();
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& entry : tensor->external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = std::stoll(entry.value());
    if (entry.key() == "length") length = std::stoll(entry.value());
  }
  const std::string what = absl::StrCat("tensor '", tensor->name(), "'");
  if (location.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": external data without a location"));
  if (model_dir.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data but no model folder is known"));
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(model_dir), ec);
  const fs::path file = fs::weakly_canonical(base / fs::path(location), ec);
  const std::string base_str = base.string() + "/";
  if (fs::path(location).is_absolute() || file.string().compare(0, base_str.size(), base_str) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, ": external data path '", location, "' escapes the model's folder"));
  }
  QFUSE_ASSIGN_OR_RETURN(std::string bytes, base::ReadFileToString(file.string()));
  if (offset < 0 || offset > static_cast<int64_t>(bytes.size())) {
    return absl::OutOfRangeError(absl::StrCat(what, ": external data offset ", offset, " is past the end of ", location));
  }
  if (length < 0) length = static_cast<int64_t>(bytes.size()) - offset;
  if (offset + length > static_cast<int64_t>(bytes.size())) {
    return absl::OutOfRangeError(absl::StrCat(what, ": external data runs past the end of ", location));
  }
  tensor->set_raw_data(bytes.substr(offset, length));
  tensor->clear_external_data();
  tensor->set_data_location(onnx::TensorProto::DEFAULT);
  return absl::OkStatus();
}

absl::StatusOr<TensorType> TypeFromProto(const onnx::TypeProto& type, const std::string& value_name) {
  if (!type.has_tensor_type()) {
    return absl::UnimplementedError(absl::StrCat("value '", value_name,
                                                 "' is not a tensor (sequence, map and optional types are unsupported)"));
  }
  TensorType out;
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(type.tensor_type().elem_type());
  if (!dtype.ok()) {
    return absl::Status(dtype.status().code(), absl::StrCat("value '", value_name, "': ", dtype.status().message()));
  }
  out.dtype = *dtype;
  if (type.tensor_type().has_shape()) {
    out.shape.rank_known = true;
    for (const auto& d : type.tensor_type().shape().dim()) {
      if (d.has_dim_value()) {
        out.shape.dims.push_back(Dim::Known(d.dim_value()));
      } else if (d.has_dim_param()) {
        out.shape.dims.push_back(Dim::Symbolic(d.dim_param()));
      } else {
        out.shape.dims.push_back(Dim{});
      }
    }
  }
  return out;
}

absl::StatusOr<AttributeValue> AttributeFromProto(const onnx::AttributeProto& attr) {
  using A = onnx::AttributeProto;
  switch (attr.type()) {
    case A::FLOAT: return AttributeValue(attr.f());
    case A::INT: return AttributeValue(static_cast<int64_t>(attr.i()));
    case A::STRING: return AttributeValue(attr.s());
    case A::FLOATS: return AttributeValue(std::vector<float>(attr.floats().begin(), attr.floats().end()));
    case A::INTS: return AttributeValue(std::vector<int64_t>(attr.ints().begin(), attr.ints().end()));
    case A::STRINGS: return AttributeValue(std::vector<std::string>(attr.strings().begin(), attr.strings().end()));
    case A::TENSOR: {
      QFUSE_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(attr.t(), attr.name()));
      return AttributeValue(std::move(t));
    }
    case A::GRAPH:
    case A::GRAPHS:
      return absl::UnimplementedError(absl::StrCat("attribute '", attr.name(), "' is a subgraph; control flow is unsupported"));
    default:
      return absl::UnimplementedError(absl::StrCat("attribute '", attr.name(), "' has unsupported kind ",
                                                   A::AttributeType_Name(attr.type())));
  }
}

// The tensor a Constant node produces.
absl::StatusOr<Tensor> ConstantNodeValue(const onnx::NodeProto& node) {
  if (node.attribute_size() != 1) {
    return absl::InvalidArgumentError("Constant node must have exactly one attribute");
  }
  const onnx::AttributeProto& attr = node.attribute(0);
  const std::string& kind = attr.name();
  if (kind == "value") return TensorFromProto(attr.t(), node.output(0));
  if (kind == "value_float") return Tensor::Scalar<float>(attr.f());
  if (kind == "value_int") return Tensor::Scalar<int64_t>(attr.i());
  if (kind == "value_floats") {
    std::vector<float> v(attr.floats().begin(), attr.floats().end());
    return Tensor::FromVector<float>({static_cast<int64_t>(v.size())}, v);
  }
  if (kind == "value_ints") {
    std::vector<int64_t> v(attr.ints().begin(), attr.ints().end());
    return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  return absl::UnimplementedError(absl::StrCat("Constant attribute '", kind, "' is unsupported"));
}

absl::Status BuildGraph(const onnx::GraphProto& gp, Graph* graph) {
  graph->set_name(gp.name());
  absl::flat_hash_map<std::string, const onnx::TypeProto*> declared_types;
  for (const auto& vi : gp.value_info()) declared_types[vi.name()] = &vi.type();
  for (const auto& vi : gp.output()) declared_types[vi.name()] = &vi.type();

  absl::flat_hash_set<std::string> initializer_names;
  for (const auto& init : gp.initializer()) initializer_names.insert(init.name());
  if (gp.sparse_initializer_size() > 0) return absl::UnimplementedError("sparse initializers are unsupported");

  for (const auto& in : gp.input()) {
    if (initializer_names.contains(in.name())) continue;  // IR<4 style: initializer listed as input
    QFUSE_ASSIGN_OR_RETURN(TensorType type, TypeFromProto(in.type(), in.name()));
    QFUSE_RETURN_IF_ERROR(graph->AddInput(in.name(), std::move(type)).status());
  }
  for (const auto& init : gp.initializer()) {
    QFUSE_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(init, init.name()));
    QFUSE_RETURN_IF_ERROR(graph->AddConstant(init.name(), std::move(t)).status());
  }

  absl::flat_hash_set<std::string> node_names;
  for (const auto& n : gp.node()) node_names.insert(n.name());
  absl::flat_hash_map<std::string, int> op_counters;
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& np = gp.node(i);
    std::string name = np.name();
    if (name.empty()) {
      do {
        name = absl::StrCat(np.op_type(), "_", op_counters[np.op_type()]++);
      } while (node_names.contains(name));
      node_names.insert(name);
    }
    const std::string where = absl::StrCat("node '", name, "' (", np.op_type(), ")");
    if (!IsDefaultDomain(np.domain())) {
      return absl::UnimplementedError(absl::StrCat(where, ": domain '", np.domain(), "' is unsupported"));
    }
    if (np.op_type() == "Constant") {
      absl::StatusOr<Tensor> value = ConstantNodeValue(np);
      if (!value.ok()) return Annotate(value.status(), where);
      QFUSE_RETURN_IF_ERROR(Annotate(graph->AddConstant(np.output(0), *std::move(value)).status(), where));
      continue;
    }
    std::vector<Value*> inputs;
    for (const std::string& in : np.input()) {
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      Value* v = graph->FindValue(in);
      if (v == nullptr) return absl::InvalidArgumentError(absl::StrCat(where, ": input '", in, "' is not defined"));
      inputs.push_back(v);
    }
    AttributeMap attrs;
    for (const auto& ap : np.attribute()) {
      absl::StatusOr<AttributeValue> value = AttributeFromProto(ap);
      if (!value.ok()) return Annotate(value.status(), where);
      attrs.Set(ap.name(), *std::move(value));
    }
    std::vector<std::string> outputs(np.output().begin(), np.output().end());
    QFUSE_ASSIGN_OR_RETURN(Node * node, graph->AddNode(np.op_type(), name, inputs, outputs, std::move(attrs)));
    for (Value* out : node->outputs()) {
      if (out == nullptr) continue;
      auto it = declared_types.find(out->name());
      if (it == declared_types.end()) continue;
      absl::StatusOr<TensorType> type = TypeFromProto(*it->second, out->name());
      if (!type.ok()) return Annotate(type.status(), where);
      out->mutable_type() = *std::move(type);
    }
  }
  for (const auto& out : gp.output()) {
    Value* v = graph->FindValue(out.name());
    if (v == nullptr) return absl::InvalidArgumentError(absl::StrCat("graph output '", out.name(), "' is not defined"));
    if (v->is_graph_output()) {
      return absl::UnimplementedError(absl::StrCat("graph output '", out.name(), "' is listed twice"));
    }
    QFUSE_RETURN_IF_ERROR(graph->MarkOutput(v));
    if (!v->is_constant() && v->type().dtype == DataType::kUndefined) {
      QFUSE_ASSIGN_OR_RETURN(v->mutable_type(), TypeFromProto(out.type(), out.name()));
    }
  }
  return absl::OkStatus();
}

// A model older than kMinImportOpset is accepted when none of its operators changed
// between its opset and kMinImportOpset: it is then exactly an opset-7 model.
absl::Status CheckUpgradableToMinOpset(const onnx::GraphProto& graph, int64_t opset) {
  for (const onnx::NodeProto& node : graph.node()) {
    const auto* old_schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset));
    const auto* new_schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(kMinImportOpset));
    if (old_schema == nullptr || new_schema == nullptr || old_schema->since_version() != new_schema->since_version()) {
      return absl::UnimplementedError(absl::StrCat(
          "default-domain opset ", opset, " is unsupported (qfuse imports opsets ", kMinImportOpset, " to ",
          kMaxImportOpset, "; older models only when no operator changed since, but ", node.op_type(),
          " did)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Model> ImportModel(onnx::ModelProto proto, const std::string& model_dir, const std::string& label,
                                  const ImportOptions& options) {
  int64_t opset = -1;
  for (const auto& entry : proto.opset_import()) {
    if (IsDefaultDomain(entry.domain())) opset = entry.version();
  }
  if (opset < 0) return absl::InvalidArgumentError(absl::StrCat(label, ": no default-domain opset_import"));
  if (opset > kMaxImportOpset) {
    return absl::UnimplementedError(absl::StrCat(label, ": default-domain opset ", opset,
                                                 " is unsupported (qfuse imports opsets ", kMinImportOpset, " to ",
                                                 kMaxImportOpset, ")"));
  }
  if (opset < kMinImportOpset) QFUSE_RETURN_IF_ERROR(Annotate(CheckUpgradableToMinOpset(proto.graph(), opset), label));
  onnx::GraphProto* gp = proto.mutable_graph();
  for (auto& init : *gp->mutable_initializer()) {
    QFUSE_RETURN_IF_ERROR(Annotate(ResolveExternalData(&init, model_dir), label));
  }
  for (auto& node : *gp->mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) QFUSE_RETURN_IF_ERROR(Annotate(ResolveExternalData(attr.mutable_t(), model_dir), label));
    }
  }
  Float16Upcast upcast;
  if (options.upcast_float16) QFUSE_RETURN_IF_ERROR(Annotate(UpcastFloat16(gp, &upcast), label));
  // Valid graphs written out of order (a float16 converter's appended input Casts) run in
  // onnxruntime, which sorts them; the checker and the graph below need the order.
  SortNodesTopologically(gp);
  if (options.run_checker) {
    try {
      onnx::checker::check_model(proto);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(label, ": ONNX checker: ", OneLine(e.what())));
    }
  }
  QFUSE_RETURN_IF_ERROR(Annotate(CheckGraphInterface(proto.graph()), label));
  if (options.infer_shapes) {
    QFUSE_RETURN_IF_ERROR(Annotate(GuardShapeInference(proto.mutable_graph()), label));
    try {
      onnx::shape_inference::InferShapes(proto);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(label, ": ONNX shape inference: ", OneLine(e.what())));
    }
  }
  Model model;
  model.opset = std::max(opset, kMinImportOpset);
  model.ir_version = proto.ir_version();
  model.producer_name = proto.producer_name();
  model.producer_version = proto.producer_version();
  model.domain = proto.domain();
  model.model_version = proto.model_version();
  model.doc_string = proto.doc_string();
  for (const auto& prop : proto.metadata_props()) model.metadata_props.emplace_back(prop.key(), prop.value());
  model.source_path = label;
  if (upcast.changed()) model.notes.push_back(upcast.Describe());
  if (proto.functions_size() > 0) {
    return absl::UnimplementedError(absl::StrCat(label, ": model-local functions are unsupported"));
  }
  QFUSE_RETURN_IF_ERROR(Annotate(BuildGraph(proto.graph(), model.graph.get()), label));
  QFUSE_RETURN_IF_ERROR(Annotate(NormalizeOpsetForms(model.graph.get(), opset), label));
  if (options.infer_shapes) QFUSE_RETURN_IF_ERROR(Annotate(InferMissingTypes(&model), label));
  QFUSE_RETURN_IF_ERROR(Annotate(model.graph->Verify(), label));
  return model;
}

absl::StatusOr<Model> LoadModel(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not an ONNX model file"));
  }
  QFUSE_ASSIGN_OR_RETURN(std::string bytes, base::ReadFileToString(path));
  if (bytes.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": empty file, not an ONNX model"));
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a valid ONNX model (protobuf parse failed)"));
  }
  const std::string dir = fs::path(path).parent_path().string();
  return ImportModel(std::move(proto), dir.empty() ? "." : dir, path, options);
}

}  // namespace qfuse::ir
