#include "ir/onnx_export.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "ir/opset_forms.h"
#include "ir/tensor_proto.h"
#include "onnx/checker.h"

namespace qfuse::ir {
namespace {

// Smallest ONNX IR version that allows `opset` (onnx/helper.py VERSION_TABLE), and
// never below 4: IR 3 would need every initializer listed again as a graph input.
int64_t MinIrVersionForOpset(int64_t opset) {
  if (opset <= 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  return 8;
}
constexpr int64_t kMaxIrVersion = 8;  // what libonnx 1.12 checks

void TypeToProto(const TensorType& type, onnx::TypeProto* proto) {
  auto* tensor_type = proto->mutable_tensor_type();
  tensor_type->set_elem_type(DataTypeToOnnx(type.dtype));
  if (!type.shape.rank_known) return;
  auto* shape = tensor_type->mutable_shape();
  for (const Dim& d : type.shape.dims) {
    auto* dim = shape->add_dim();
    if (d.is_known()) {
      dim->set_dim_value(d.value);
    } else if (!d.symbol.empty()) {
      dim->set_dim_param(d.symbol);
    }
  }
}

void ValueInfoToProto(const Value& value, onnx::ValueInfoProto* proto) {
  proto->set_name(value.name());
  TypeToProto(value.type(), proto->mutable_type());
}

void AttributeToProto(const std::string& name, const AttributeValue& value, onnx::AttributeProto* proto) {
  using A = onnx::AttributeProto;
  proto->set_name(name);
  if (const auto* i = std::get_if<int64_t>(&value)) {
    proto->set_type(A::INT);
    proto->set_i(*i);
  } else if (const auto* f = std::get_if<float>(&value)) {
    proto->set_type(A::FLOAT);
    proto->set_f(*f);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    proto->set_type(A::STRING);
    proto->set_s(*s);
  } else if (const auto* is = std::get_if<std::vector<int64_t>>(&value)) {
    proto->set_type(A::INTS);
    for (int64_t v : *is) proto->add_ints(v);
  } else if (const auto* fs = std::get_if<std::vector<float>>(&value)) {
    proto->set_type(A::FLOATS);
    for (float v : *fs) proto->add_floats(v);
  } else if (const auto* ss = std::get_if<std::vector<std::string>>(&value)) {
    proto->set_type(A::STRINGS);
    for (const auto& v : *ss) proto->add_strings(v);
  } else if (const auto* t = std::get_if<Tensor>(&value)) {
    proto->set_type(A::TENSOR);
    TensorToProto(*t, "", proto->mutable_t());
  }
}

// Per-axis QuantizeLinear/DequantizeLinear (a scale with more than one element)
// exist from opset 13.
bool HasPerChannelQdq(const Graph& graph) {
  for (const Node* n : graph.nodes()) {
    if (n->op_type() != "QuantizeLinear" && n->op_type() != "DequantizeLinear") continue;
    const Value* scale = n->input(1);
    if (scale == nullptr || !scale->type().shape.rank_known) continue;
    if (scale->type().shape.rank() > 0 && !(scale->type().shape.fully_known() &&
                                            NumElements(scale->type().shape.KnownDims()) == 1)) {
      return true;
    }
  }
  return false;
}

}  // namespace

int64_t ExportOpset(const Model& model, const ExportOptions& options) {
  if (options.opset > 0) return options.opset;
  int64_t opset = model.opset;
  if (HasPerChannelQdq(*model.graph)) opset = std::max(opset, kPerChannelQdqOpset);
  return opset;
}

absl::StatusOr<onnx::ModelProto> ExportModel(const Model& model, const ExportOptions& options) {
  const int64_t opset = ExportOpset(model, options);
  if (opset < kMinImportOpset || opset > kMaxImportOpset) {
    return absl::InvalidArgumentError(absl::StrCat("cannot export at opset ", opset, " (supported: ",
                                                   kMinImportOpset, " to ", kMaxImportOpset, ")"));
  }
  std::unique_ptr<Graph> graph = model.graph->Clone();
  QFUSE_RETURN_IF_ERROR(ExpandUnits(graph.get()));
  QFUSE_RETURN_IF_ERROR(ConvertToOpsetForms(graph.get(), opset));

  onnx::ModelProto proto;
  proto.set_ir_version(std::max(MinIrVersionForOpset(opset), std::min(model.ir_version, kMaxIrVersion)));
  proto.set_producer_name(model.producer_name.empty() ? "qfuse" : model.producer_name);
  proto.set_producer_version(model.producer_version);
  proto.set_domain(model.domain);
  proto.set_model_version(model.model_version);
  proto.set_doc_string(model.doc_string);
  for (const auto& [key, value] : model.metadata_props) {
    auto* prop = proto.add_metadata_props();
    prop->set_key(key);
    prop->set_value(value);
  }
  auto* opset_import = proto.add_opset_import();
  opset_import->set_domain("");
  opset_import->set_version(opset);

  onnx::GraphProto* gp = proto.mutable_graph();
  gp->set_name(graph->name().empty() ? "qfuse_graph" : graph->name());
  for (const Value* in : graph->inputs()) ValueInfoToProto(*in, gp->add_input());
  for (const Value* c : graph->constants()) {
    // Constants that conversion turned into attributes are not written.
    if (c->uses().empty() && !c->is_graph_output()) continue;
    TensorToProto(*c->initializer(), c->name(), gp->add_initializer());
  }
  QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> order, graph->TopologicalOrder());
  for (const Node* n : order) {
    onnx::NodeProto* np = gp->add_node();
    np->set_name(n->name());
    np->set_op_type(n->op_type());
    if (!n->domain().empty()) np->set_domain(n->domain());
    for (const Value* in : n->inputs()) np->add_input(in == nullptr ? "" : in->name());
    for (const Value* out : n->outputs()) np->add_output(out == nullptr ? "" : out->name());
    for (const auto& [name, value] : n->attrs().all()) AttributeToProto(name, value, np->add_attribute());
    for (const Value* out : n->outputs()) {
      if (out != nullptr && !out->is_graph_output() && out->type().dtype != DataType::kUndefined) {
        ValueInfoToProto(*out, gp->add_value_info());
      }
    }
  }
  for (const Value* out : graph->outputs()) ValueInfoToProto(*out, gp->add_output());

  if (options.run_checker) {
    try {
      onnx::checker::check_model(proto);
    } catch (const std::exception& e) {
      std::string_view what = e.what();
      return absl::InternalError(
          absl::StrCat("exported model fails the ONNX checker: ", std::string(what.substr(0, what.find('\n')))));
    }
  }
  return proto;
}

absl::Status SaveModel(const Model& model, const std::string& path, const ExportOptions& options) {
  if (!model.source_path.empty() && base::SameFile(model.source_path, path)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": refusing to overwrite the input model"));
  }
  QFUSE_ASSIGN_OR_RETURN(onnx::ModelProto proto, ExportModel(model, options));
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrCat(path, ": model does not serialize (over 2 GB?)"));
  }
  return base::WriteFileAtomically(path, bytes);
}

}  // namespace qfuse::ir
