#include "ir/opset_forms.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace qfuse::ir {
namespace {

absl::Status Unsupported(const Node* node, const std::string& what) {
  return absl::UnimplementedError(absl::StrCat(node->Describe(), ": ", what));
}

// Adds `tensor` as a new constant and makes it input `index` of `node`.
absl::Status SetConstantInput(Graph* graph, Node* node, int index, const std::string& suffix, Tensor tensor) {
  const std::string name = graph->UniqueValueName(absl::StrCat(node->name(), "_", suffix));
  QFUSE_ASSIGN_OR_RETURN(Value * value, graph->AddConstant(name, std::move(tensor)));
  graph->SetInput(node, index, value);
  return absl::OkStatus();
}

Tensor Int64Vector(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// Moves an ints attribute into input `index` (when the attribute is present).
absl::Status IntsAttributeToInput(Graph* graph, Node* node, const std::string& attr, int index) {
  if (!node->attrs().Has(attr)) return absl::OkStatus();
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> values, node->attrs().GetInts(attr, {}));
  node->mutable_attrs().Erase(attr);
  return SetConstantInput(graph, node, index, attr, Int64Vector(values));
}

// Scalar of the same float type as `like` (FLOAT when unknown).
absl::StatusOr<Tensor> FloatScalarLike(const Node* node, const Value* like, float value) {
  const DataType type = like == nullptr ? DataType::kFloat32 : like->type().dtype;
  if (type == DataType::kFloat32 || type == DataType::kUndefined) return Tensor::Scalar<float>(value);
  if (type == DataType::kFloat64) return Tensor::Scalar<double>(value);
  return Unsupported(node, absl::StrCat("cannot normalise a ", DataTypeName(type), " scalar attribute"));
}

// --- Import: opset-specific form -> canonical form. ---

absl::Status NormalizeClip(Graph* graph, Node* node) {
  for (auto [attr, index] : {std::pair<const char*, int>{"min", 1}, {"max", 2}}) {
    if (!node->attrs().Has(attr)) continue;
    QFUSE_ASSIGN_OR_RETURN(float bound, node->attrs().GetFloat(attr, 0.f));
    node->mutable_attrs().Erase(attr);
    QFUSE_ASSIGN_OR_RETURN(Tensor t, FloatScalarLike(node, node->input(0), bound));
    QFUSE_RETURN_IF_ERROR(SetConstantInput(graph, node, index, attr, std::move(t)));
  }
  return absl::OkStatus();
}

absl::Status NormalizePad(Graph* graph, Node* node) {
  QFUSE_RETURN_IF_ERROR(IntsAttributeToInput(graph, node, "pads", 1));
  if (node->attrs().Has("value")) {
    QFUSE_ASSIGN_OR_RETURN(float value, node->attrs().GetFloat("value", 0.f));
    node->mutable_attrs().Erase("value");
    QFUSE_ASSIGN_OR_RETURN(Tensor t, FloatScalarLike(node, node->input(0), value));
    QFUSE_RETURN_IF_ERROR(SetConstantInput(graph, node, 2, "value", std::move(t)));
  }
  return absl::OkStatus();
}

absl::Status NormalizeDropout(Graph* graph, Node* node) {
  if (!node->attrs().Has("ratio")) return absl::OkStatus();
  QFUSE_ASSIGN_OR_RETURN(float ratio, node->attrs().GetFloat("ratio", 0.5f));
  node->mutable_attrs().Erase("ratio");
  return SetConstantInput(graph, node, 1, "ratio", Tensor::Scalar<float>(ratio));
}

// Upsample (7-9) and Resize-10 use asymmetric coordinates with floor rounding.
absl::Status NormalizeLegacyResize(Graph* graph, Node* node) {
  if (node->op_type() == "Upsample" && node->attrs().Has("scales")) {  // opset 7-8
    QFUSE_ASSIGN_OR_RETURN(std::vector<float> scales, node->attrs().GetFloats("scales", {}));
    node->mutable_attrs().Erase("scales");
    QFUSE_RETURN_IF_ERROR(SetConstantInput(graph, node, 1, "scales",
                                           Tensor::FromVector<float>({static_cast<int64_t>(scales.size())}, scales)));
  }
  QFUSE_ASSIGN_OR_RETURN(std::string mode, node->attrs().GetString("mode", "nearest"));
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") return Unsupported(node, absl::StrCat("mode '", mode, "'"));
  Value* scales = node->input(1);
  graph->SetInput(node, 2, scales);
  graph->SetInput(node, 1, nullptr);  // roi
  AttributeMap attrs;
  attrs.Set("mode", mode);
  attrs.Set("coordinate_transformation_mode", std::string("asymmetric"));
  if (mode == "nearest") attrs.Set("nearest_mode", std::string("floor"));
  node->mutable_attrs() = attrs;
  graph->SetOpType(node, "Resize");
  return absl::OkStatus();
}

bool IsEmptyConstant(const Value* v) { return v != nullptr && v->is_constant() && v->initializer()->num_elements() == 0; }

absl::Status NormalizeResize11(Graph* graph, Node* node) {
  if (IsEmptyConstant(node->input(1))) graph->SetInput(node, 1, nullptr);
  if (IsEmptyConstant(node->input(2)) && node->input(3) != nullptr) graph->SetInput(node, 2, nullptr);
  return absl::OkStatus();
}

absl::Status NormalizeBatchNorm(Graph* graph, Node* node) {
  QFUSE_ASSIGN_OR_RETURN(int64_t spatial, node->attrs().GetInt("spatial", 1));
  if (spatial != 1) return Unsupported(node, "spatial=0 (per-activation) batch normalization");
  node->mutable_attrs().Erase("spatial");
  node->mutable_attrs().Erase("consumed_inputs");
  // Training-mode statistics outputs are meaningless in inference; drop them if unused.
  if (!graph->TruncateOutputs(node, 1).ok()) {
    return Unsupported(node, "training-mode outputs (running mean/var) are used; inference BatchNormalization only");
  }
  return absl::OkStatus();
}

// Softmax-family before opset 13 flattens to 2-D at `axis`; opset 13 works on one axis.
absl::Status NormalizeSoftmax(Graph* graph, Node* node) {
  QFUSE_ASSIGN_OR_RETURN(int64_t axis, node->attrs().GetInt("axis", 1));
  const Value* x = node->input(0);
  // With the rank known, the last axis needs no rewrite. Otherwise (rank unknown, as behind a
  // Reshape whose shape is computed at run time) the rewrite below works for any rank: Flatten
  // resolves a negative axis against the run-time rank, as the old Softmax did.
  if (x->type().shape.rank_known) {
    const int64_t rank = x->type().shape.rank();
    if (axis < 0) axis += rank;
    if (axis == rank - 1) {
      node->mutable_attrs().Set("axis", int64_t{-1});
      return absl::OkStatus();
    }
  }
  // Flatten(axis) -> Op(axis=-1) -> Reshape(Shape(x)) keeps the old semantics.
  Value* out = node->output(0);
  const std::string out_name = out->name();
  const TensorType out_type = out->type();
  const std::string base = node->name();
  AttributeMap flatten_attrs;
  flatten_attrs.Set("axis", axis);
  QFUSE_ASSIGN_OR_RETURN(Node * flatten, graph->AddNode("Flatten", base + "_flatten", {node->input(0)},
                                                        {graph->UniqueValueName(base + "_2d")}, flatten_attrs));
  AttributeMap op_attrs;
  op_attrs.Set("axis", int64_t{-1});
  QFUSE_ASSIGN_OR_RETURN(Node * op, graph->AddNode(node->op_type(), base + "_2d_op", {flatten->output(0)},
                                                   {graph->UniqueValueName(base + "_2d_out")}, op_attrs));
  QFUSE_ASSIGN_OR_RETURN(Node * shape, graph->AddNode("Shape", base + "_shape", {node->input(0)},
                                                      {graph->UniqueValueName(base + "_in_shape")}));
  QFUSE_ASSIGN_OR_RETURN(Node * reshape, graph->AddNode("Reshape", base + "_reshape",
                                                        {op->output(0), shape->output(0)},
                                                        {graph->UniqueValueName(base + "_nd")}));
  graph->ReplaceAllUsesWith(out, reshape->output(0));
  QFUSE_RETURN_IF_ERROR(graph->RemoveNode(node));
  QFUSE_RETURN_IF_ERROR(graph->RenameValue(reshape->output(0), out_name));
  reshape->output(0)->mutable_type() = out_type;
  return absl::OkStatus();
}

// --- Export: canonical form -> target opset form. ---

absl::StatusOr<const Tensor*> ConstantInput(const Node* node, int index, const std::string& what) {
  const Value* v = node->input(index);
  if (v == nullptr || !v->is_constant()) {
    return Unsupported(node, absl::StrCat(what, " must be a constant to be written as an attribute at this opset"));
  }
  return v->initializer();
}

absl::Status InputToIntsAttribute(Graph* graph, Node* node, int index, const std::string& attr) {
  if (node->input(index) == nullptr) return absl::OkStatus();
  QFUSE_ASSIGN_OR_RETURN(const Tensor* t, ConstantInput(node, index, attr));
  if (t->dtype() != DataType::kInt64) return Unsupported(node, absl::StrCat(attr, " is not INT64"));
  auto values = t->values<int64_t>();
  node->mutable_attrs().Set(attr, std::vector<int64_t>(values.begin(), values.end()));
  graph->SetInput(node, index, nullptr);
  return absl::OkStatus();
}

absl::StatusOr<float> ScalarAsFloat(const Tensor& t) {
  if (t.num_elements() != 1) return absl::InvalidArgumentError("not a scalar");
  if (t.dtype() == DataType::kFloat32) return t.data<float>()[0];
  if (t.dtype() == DataType::kFloat64) return static_cast<float>(t.data<double>()[0]);
  return absl::InvalidArgumentError("not a FLOAT or DOUBLE scalar");
}

absl::Status InputToFloatAttribute(Graph* graph, Node* node, int index, const std::string& attr) {
  if (node->input(index) == nullptr) return absl::OkStatus();
  QFUSE_ASSIGN_OR_RETURN(const Tensor* t, ConstantInput(node, index, attr));
  absl::StatusOr<float> value = ScalarAsFloat(*t);
  if (!value.ok()) return Unsupported(node, absl::StrCat(attr, ": ", value.status().message()));
  node->mutable_attrs().Set(attr, *value);
  graph->SetInput(node, index, nullptr);
  return absl::OkStatus();
}

absl::Status ConvertResize(Graph* graph, Node* node, int64_t opset) {
  if (opset >= 13) return absl::OkStatus();
  if (opset >= 11) {
    if (node->input(1) == nullptr) {
      QFUSE_RETURN_IF_ERROR(SetConstantInput(graph, node, 1, "roi", Tensor(DataType::kFloat32, {0})));
    }
    if (node->input(2) == nullptr && node->input(3) != nullptr) {
      QFUSE_RETURN_IF_ERROR(SetConstantInput(graph, node, 2, "scales", Tensor(DataType::kFloat32, {0})));
    }
    return absl::OkStatus();
  }
  // Below opset 11 only asymmetric coordinates with floor-nearest or linear exist.
  QFUSE_ASSIGN_OR_RETURN(std::string coord, node->attrs().GetString("coordinate_transformation_mode", "half_pixel"));
  QFUSE_ASSIGN_OR_RETURN(std::string mode, node->attrs().GetString("mode", "nearest"));
  QFUSE_ASSIGN_OR_RETURN(std::string nearest, node->attrs().GetString("nearest_mode", "round_prefer_floor"));
  if (coord != "asymmetric" || (mode == "nearest" && nearest != "floor") || mode == "cubic" ||
      node->input(3) != nullptr || node->input(2) == nullptr) {
    return Unsupported(node, absl::StrCat("this Resize cannot be expressed at opset ", opset));
  }
  AttributeMap attrs;
  attrs.Set("mode", mode);
  Value* scales = node->input(2);
  graph->SetInput(node, 2, nullptr);
  graph->SetInput(node, 1, scales);
  node->mutable_attrs() = attrs;
  if (opset >= 10) return absl::OkStatus();
  graph->SetOpType(node, "Upsample");
  if (opset >= 9) return absl::OkStatus();
  QFUSE_ASSIGN_OR_RETURN(const Tensor* t, ConstantInput(node, 1, "scales"));
  if (t->dtype() != DataType::kFloat32) return Unsupported(node, "scales is not FLOAT");
  auto values = t->values<float>();
  node->mutable_attrs().Set("scales", std::vector<float>(values.begin(), values.end()));
  graph->SetInput(node, 1, nullptr);
  return absl::OkStatus();
}

absl::Status ConvertSoftmax(Node* node, int64_t opset) {
  if (opset >= 13) return absl::OkStatus();
  QFUSE_ASSIGN_OR_RETURN(int64_t axis, node->attrs().GetInt("axis", -1));
  const Value* x = node->input(0);
  const bool last = axis == -1 || (x->type().shape.rank_known && axis == x->type().shape.rank() - 1);
  if (!last) return Unsupported(node, absl::StrCat("axis ", axis, " is not the last axis; cannot export below opset 13"));
  node->mutable_attrs().Set("axis", int64_t{-1});
  return absl::OkStatus();
}

// HardSwish (opset 14) as Mul(x, HardSigmoid(x, alpha = 1/6, beta = 1/2)): the node becomes
// the Mul, keeping its name and output.
absl::Status ConvertHardSwish(Graph* graph, Node* node) {
  Value* x = node->input(0);
  AttributeMap attrs;
  attrs.Set("alpha", 1.f / 6.f);
  attrs.Set("beta", 0.5f);
  QFUSE_ASSIGN_OR_RETURN(Node * gate, graph->AddNode("HardSigmoid", node->name() + "_hard_sigmoid", {x},
                                                     {graph->UniqueValueName(x->name() + "_hard_sigmoid")}, attrs));
  gate->output(0)->mutable_type() = node->output(0)->type();
  graph->SetOpType(node, "Mul");
  node->mutable_attrs() = AttributeMap();
  graph->AppendInput(node, gate->output(0));
  return absl::OkStatus();
}

}  // namespace

absl::Status NormalizeOpsetForms(Graph* graph, int64_t opset) {
  for (Node* node : graph->nodes()) {
    const std::string& op = node->op_type();
    if (op == "Clip" && opset < 11) {
      QFUSE_RETURN_IF_ERROR(NormalizeClip(graph, node));
    } else if ((op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") && opset < 13) {
      QFUSE_RETURN_IF_ERROR(IntsAttributeToInput(graph, node, "axes", 1));
    } else if (op == "Split" && opset < 13) {
      QFUSE_RETURN_IF_ERROR(IntsAttributeToInput(graph, node, "split", 1));
    } else if (op == "Pad" && opset < 11) {
      QFUSE_RETURN_IF_ERROR(NormalizePad(graph, node));
    } else if (op == "Slice" && opset < 10) {
      QFUSE_RETURN_IF_ERROR(IntsAttributeToInput(graph, node, "starts", 1));
      QFUSE_RETURN_IF_ERROR(IntsAttributeToInput(graph, node, "ends", 2));
      QFUSE_RETURN_IF_ERROR(IntsAttributeToInput(graph, node, "axes", 3));
    } else if (op == "Dropout" && opset < 12) {
      QFUSE_RETURN_IF_ERROR(NormalizeDropout(graph, node));
    } else if (op == "Upsample" || (op == "Resize" && opset < 11)) {
      QFUSE_RETURN_IF_ERROR(NormalizeLegacyResize(graph, node));
    } else if (op == "Resize" && opset < 13) {
      QFUSE_RETURN_IF_ERROR(NormalizeResize11(graph, node));
    } else if (op == "BatchNormalization") {
      QFUSE_RETURN_IF_ERROR(NormalizeBatchNorm(graph, node));
    } else if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13) {
      QFUSE_RETURN_IF_ERROR(NormalizeSoftmax(graph, node));
    }
  }
  for (Node* node : graph->nodes()) graph->RemoveTrailingNullInputs(node);
  // Constants that became attributes' replacements' leftovers (and initializers no
  // node reads) are dropped, so every import of a graph yields the same constants.
  graph->RemoveUnusedConstants();
  return absl::OkStatus();
}

absl::Status ConvertToOpsetForms(Graph* graph, int64_t opset) {
  for (Node* node : graph->nodes()) {
    const std::string& op = node->op_type();
    if (op == "Clip" && opset < 11) {
      QFUSE_RETURN_IF_ERROR(InputToFloatAttribute(graph, node, 1, "min"));
      QFUSE_RETURN_IF_ERROR(InputToFloatAttribute(graph, node, 2, "max"));
    } else if ((op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") && opset < 13) {
      QFUSE_RETURN_IF_ERROR(InputToIntsAttribute(graph, node, 1, "axes"));
    } else if (op == "Split" && opset < 13) {
      QFUSE_RETURN_IF_ERROR(InputToIntsAttribute(graph, node, 1, "split"));
    } else if (op == "Pad" && opset < 11) {
      QFUSE_RETURN_IF_ERROR(InputToIntsAttribute(graph, node, 1, "pads"));
      QFUSE_RETURN_IF_ERROR(InputToFloatAttribute(graph, node, 2, "value"));
    } else if (op == "Slice" && opset < 10) {
      if (node->input(4) != nullptr) return Unsupported(node, "Slice steps need opset >= 10");
      QFUSE_RETURN_IF_ERROR(InputToIntsAttribute(graph, node, 1, "starts"));
      QFUSE_RETURN_IF_ERROR(InputToIntsAttribute(graph, node, 2, "ends"));
      QFUSE_RETURN_IF_ERROR(InputToIntsAttribute(graph, node, 3, "axes"));
    } else if (op == "Dropout" && opset < 12) {
      if (node->input(2) != nullptr) return Unsupported(node, "Dropout training_mode needs opset >= 12");
      QFUSE_RETURN_IF_ERROR(InputToFloatAttribute(graph, node, 1, "ratio"));
    } else if (op == "Resize") {
      QFUSE_RETURN_IF_ERROR(ConvertResize(graph, node, opset));
    } else if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax")) {
      QFUSE_RETURN_IF_ERROR(ConvertSoftmax(node, opset));
    } else if (op == "HardSwish" && node->domain().empty() && opset < 14) {
      QFUSE_RETURN_IF_ERROR(ConvertHardSwish(graph, node));
    } else if (op == "BatchNormalization" && opset < 14) {
      QFUSE_ASSIGN_OR_RETURN(int64_t training, node->attrs().GetInt("training_mode", 0));
      if (training != 0) return Unsupported(node, "training_mode needs opset >= 14");
      node->mutable_attrs().Erase("training_mode");
    }
    graph->RemoveTrailingNullInputs(node);
  }
  return absl::OkStatus();
}

}  // namespace qfuse::ir
