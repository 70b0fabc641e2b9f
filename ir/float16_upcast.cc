#include "ir/float16_upcast.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/float16.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"

namespace qfuse::ir {
namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kFloat16 = onnx::TensorProto::FLOAT16;

// A FLOAT16 tensor's data as FLOAT (read and checked by tensor_proto.h, widened exactly).
absl::Status WidenTensor(onnx::TensorProto* t) {
  absl::StatusOr<Tensor> halves = TensorFromProto(*t, t->name());
  if (!halves.ok()) return halves.status();
  absl::StatusOr<Tensor> floats = Tensor::Create(DataType::kFloat32, halves->dims());
  if (!floats.ok()) return floats.status();
  const absl::Span<const uint16_t> in = halves->values<uint16_t>();
  const absl::Span<float> out = floats->mutable_values<float>();
  for (size_t i = 0; i < in.size(); ++i) out[i] = HalfBitsToFloat(in[i]);
  const std::string name = t->name();
  t->Clear();
  TensorToProto(*floats, name, t);
  return absl::OkStatus();
}

// FLOAT16 element types of `type` (tensors, and the elements of sequences and optionals).
void UpcastType(onnx::TypeProto* type, int64_t* changed) {
  if (type->has_tensor_type() && type->tensor_type().elem_type() == kFloat16) {
    type->mutable_tensor_type()->set_elem_type(kFloat);
    ++*changed;
  }
  if (type->has_sequence_type()) UpcastType(type->mutable_sequence_type()->mutable_elem_type(), changed);
  if (type->has_optional_type()) UpcastType(type->mutable_optional_type()->mutable_elem_type(), changed);
}

// A Cast to FLOAT16 whose output is a graph output and read by no node: the boundary of a
// FLOAT16 output already (a wrapped model's, or a Cast-only graph's), kept as it is, so that
// importing an exported model again changes nothing.
bool IsOutputBoundaryCast(const onnx::NodeProto& node, const absl::flat_hash_set<std::string>& outputs,
                          const absl::flat_hash_set<std::string>& read) {
  if (node.op_type() != "Cast" || !node.domain().empty() || node.output_size() != 1) return false;
  return outputs.contains(node.output(0)) && !read.contains(node.output(0));
}

// `keep_io`: the main graph's inputs and outputs keep their types (UpcastFloat16 wraps them).
absl::Status UpcastGraph(onnx::GraphProto* graph, bool keep_io, Float16Upcast* changes) {
  absl::flat_hash_set<std::string> outputs, read;
  if (keep_io) {
    for (const onnx::ValueInfoProto& info : graph->output()) outputs.insert(info.name());
    for (const onnx::NodeProto& node : graph->node()) read.insert(node.input().begin(), node.input().end());
  }
  absl::flat_hash_set<std::string> initializers;
  for (onnx::TensorProto& t : *graph->mutable_initializer()) {
    initializers.insert(t.name());
    if (t.data_type() != kFloat16) continue;
    if (absl::Status s = WidenTensor(&t); !s.ok()) return s;
    ++changes->tensors;
  }
  for (onnx::ValueInfoProto& info : *graph->mutable_value_info()) UpcastType(info.mutable_type(), &changes->values);
  for (onnx::ValueInfoProto& info : *graph->mutable_input()) {
    // An input that is an initializer (older IR versions list them) is a weight, widened above.
    if (!keep_io || initializers.contains(info.name())) UpcastType(info.mutable_type(), &changes->values);
  }
  if (!keep_io) {
    for (onnx::ValueInfoProto& info : *graph->mutable_output()) UpcastType(info.mutable_type(), &changes->values);
  }
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.has_t() && attr.t().data_type() == kFloat16) {
        if (absl::Status s = WidenTensor(attr.mutable_t()); !s.ok()) {
          return absl::Status(s.code(), absl::StrCat("node '", node.name(), "': ", s.message()));
        }
        ++changes->tensors;
      }
      for (onnx::TensorProto& t : *attr.mutable_tensors()) {
        if (t.data_type() != kFloat16) continue;
        if (absl::Status s = WidenTensor(&t); !s.ok()) return s;
        ++changes->tensors;
      }
      if ((attr.name() == "to" || attr.name() == "dtype") && attr.type() == onnx::AttributeProto::INT &&
          attr.i() == kFloat16 && !IsOutputBoundaryCast(node, outputs, read)) {
        attr.set_i(kFloat);
        ++changes->type_attrs;
      }
      if (attr.has_g()) {
        if (absl::Status s = UpcastGraph(attr.mutable_g(), false, changes); !s.ok()) return s;
      }
      for (onnx::GraphProto& sub : *attr.mutable_graphs()) {
        if (absl::Status s = UpcastGraph(&sub, false, changes); !s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

// Every read of value `from` in `graph`'s nodes and their subgraphs becomes a read of `to`.
void RenameReads(onnx::GraphProto* graph, const std::string& from, const std::string& to) {
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    for (std::string& in : *node.mutable_input()) {
      if (in == from) in = to;
    }
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) RenameReads(attr.mutable_g(), from, to);
      for (onnx::GraphProto& sub : *attr.mutable_graphs()) RenameReads(&sub, from, to);
    }
  }
}

// A name for `base`'s float copy that no value of `graph` has ("<base>_float", numbered if taken).
std::string FreshName(const onnx::GraphProto& graph, const std::string& base) {
  absl::flat_hash_set<std::string> taken;
  for (const onnx::NodeProto& node : graph.node()) {
    taken.insert(node.input().begin(), node.input().end());
    taken.insert(node.output().begin(), node.output().end());
  }
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()}) {
    for (const onnx::ValueInfoProto& info : *list) taken.insert(info.name());
  }
  for (const onnx::TensorProto& t : graph.initializer()) taken.insert(t.name());
  std::string name = base + "_float";
  for (int i = 1; taken.contains(name); ++i) name = absl::StrCat(base, "_float", i);
  return name;
}

onnx::NodeProto MakeCast(const std::string& in, const std::string& out, int32_t to) {
  onnx::NodeProto cast;
  cast.set_op_type("Cast");
  cast.set_name(absl::StrCat(out, "_Cast"));
  cast.add_input(in);
  cast.add_output(out);
  onnx::AttributeProto* attr = cast.add_attribute();
  attr->set_name("to");
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(to);
  return cast;
}

bool IsFloat16Tensor(const onnx::ValueInfoProto& info) {
  return info.type().has_tensor_type() && info.type().tensor_type().elem_type() == kFloat16;
}

// Whether every reader of `name` in `graph` is a Cast (a FLOAT16 input's boundary already).
bool ReadOnlyByCasts(const onnx::GraphProto& graph, const std::string& name) {
  bool read = false;
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& in : node.input()) {
      if (in != name) continue;
      if (node.op_type() != "Cast" || !node.domain().empty()) return false;
      read = true;
    }
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.has_g() || attr.graphs_size() > 0) return false;  // a subgraph may read it
    }
  }
  return read;
}

// Whether `name` is the output of a Cast to FLOAT16 in `graph`.
bool MadeByFloat16Cast(const onnx::GraphProto& graph, const std::string& name) {
  for (const onnx::NodeProto& node : graph.node()) {
    if (node.op_type() != "Cast" || !node.domain().empty() || node.output_size() != 1 || node.output(0) != name) {
      continue;
    }
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "to" && attr.i() == kFloat16) return true;
    }
  }
  return false;
}

// FLOAT16 graph inputs and outputs keep their type: a Cast to FLOAT after each input, and one
// back to FLOAT16 before each output, around the widened graph.
void WrapFloat16Interface(onnx::GraphProto* graph, Float16Upcast* changes) {
  absl::flat_hash_set<std::string> initializers;
  for (const onnx::TensorProto& t : graph->initializer()) initializers.insert(t.name());
  absl::flat_hash_set<std::string> inputs;  // the graph's inputs that are not weights
  std::vector<onnx::NodeProto> front;
  for (const onnx::ValueInfoProto& info : graph->input()) {
    if (initializers.contains(info.name())) continue;  // a weight (older IR versions list them), widened
    inputs.insert(info.name());
    if (!IsFloat16Tensor(info) || ReadOnlyByCasts(*graph, info.name())) continue;
    const std::string inner = FreshName(*graph, info.name());
    RenameReads(graph, info.name(), inner);
    for (onnx::ValueInfoProto& other : *graph->mutable_value_info()) {
      if (other.name() == info.name()) other.set_name(inner);
    }
    front.push_back(MakeCast(info.name(), inner, kFloat));
    ++changes->interface_casts;
  }
  for (const onnx::ValueInfoProto& info : graph->output()) {
    // A pass-through stays as it is; so does an output a Cast to FLOAT16 makes (a boundary).
    if (!IsFloat16Tensor(info) || inputs.contains(info.name()) || MadeByFloat16Cast(*graph, info.name())) continue;
    const std::string inner = FreshName(*graph, info.name());
    RenameReads(graph, info.name(), inner);
    // Whatever defines the value (a node, or a weight and its input entry) now defines `inner`.
    for (onnx::NodeProto& node : *graph->mutable_node()) {
      for (std::string& out : *node.mutable_output()) {
        if (out == info.name()) out = inner;
      }
    }
    for (onnx::TensorProto& t : *graph->mutable_initializer()) {
      if (t.name() == info.name()) t.set_name(inner);
    }
    for (auto* list : {graph->mutable_input(), graph->mutable_value_info()}) {
      for (onnx::ValueInfoProto& other : *list) {
        if (other.name() == info.name()) other.set_name(inner);
      }
    }
    *graph->add_node() = MakeCast(inner, info.name(), kFloat16);
    ++changes->interface_casts;
  }
  if (front.empty()) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (onnx::NodeProto& cast : front) *nodes.Add() = std::move(cast);
  for (onnx::NodeProto& node : *graph->mutable_node()) *nodes.Add() = std::move(node);
  graph->mutable_node()->Swap(&nodes);
}

}  // namespace

std::string Float16Upcast::Describe() const {
  std::string line = absl::StrCat("FLOAT16 model imported as FLOAT (the same weights, computed in float32): ", tensors,
                                  " tensors widened, ", type_attrs, " Cast/dtype attributes and ", values,
                                  " value types set to FLOAT");
  if (interface_casts > 0) {
    absl::StrAppend(&line, "; ", interface_casts, " FLOAT16 graph inputs/outputs kept through Casts");
  }
  return line;
}

absl::Status UpcastFloat16(onnx::GraphProto* graph, Float16Upcast* changes) {
  if (absl::Status s = UpcastGraph(graph, true, changes); !s.ok()) return s;
  WrapFloat16Interface(graph, changes);
  return absl::OkStatus();
}

}  // namespace qfuse::ir
