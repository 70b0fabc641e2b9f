#include "runtime/int8/layer_norm_fusion.h"

#include <algorithm>
#include <string>
#include <utility>

#include "ir/fused_unit.h"
#include "runtime/int8/float_chain.h"
#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {
namespace {

// A one-dimensional FLOAT constant.
bool IsVectorConstant(const ir::Value* v) {
  return v != nullptr && v->is_constant() && v->initializer()->dtype() == ir::DataType::kFloat32 &&
         v->initializer()->dims().size() == 1;
}

// `v`, or the constant an Identity chain passes on (PyTorch's exporter writes a weight shared
// by several layers, such as LayerNorm's all-ones scale, as Identity nodes of one initializer;
// onnxruntime folds them before it fuses).
ir::Value* ThroughIdentity(ir::Value* v) {
  while (v != nullptr && !v->is_constant() && v->producer() != nullptr && IsOnnxOp(v->producer(), "Identity")) {
    v = v->producer()->input(0);
  }
  return v;
}

// ReduceMean's axes as negative numbers, sorted, when they are the trailing axes -k..-1 and
// keepdims is 1: returns -k. Axes come from the attribute (opset < 18) or a constant input.
std::optional<int64_t> TrailingReduceAxis(const ir::Node& rm, const ir::Value& x) {
  absl::StatusOr<int64_t> keepdims = rm.attrs().GetInt("keepdims", 1);
  if (!keepdims.ok() || *keepdims != 1) return std::nullopt;
  absl::StatusOr<std::vector<int64_t>> attr_axes = rm.attrs().GetInts("axes", {});
  if (!attr_axes.ok()) return std::nullopt;
  std::vector<int64_t> axes = *attr_axes;
  if (const ir::Value* in = rm.input(1); in != nullptr) {
    if (!in->is_constant() || in->initializer()->dtype() != ir::DataType::kInt64) return std::nullopt;
    const auto values = in->initializer()->values<int64_t>();
    axes.assign(values.begin(), values.end());
  }
  if (axes.empty()) return std::nullopt;
  const ir::Shape& shape = x.type().shape;
  for (int64_t& a : axes) {
    if (a >= 0) {
      if (!shape.rank_known) return std::nullopt;
      a -= shape.rank();
    }
  }
  std::sort(axes.begin(), axes.end());
  const int64_t k = static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < k; ++i) {
    if (axes[i] != i - k) return std::nullopt;
  }
  return -k;
}

// Whether `v` comes from a Transpose, through DequantizeLinear / QuantizeLinear pairs and a
// Sub (the LayerNorm's difference): onnxruntime's transpose optimizer moves such a Transpose
// past the chain, which then reduces over a non-last axis and is not fused there (ConvNeXt's
// channels-last LayerNorm).
bool AfterTranspose(const ir::Value* v) {
  for (int steps = 0; v != nullptr && v->producer() != nullptr && steps < 8; ++steps) {
    const ir::Node* p = v->producer();
    if (IsOnnxOp(p, "Transpose")) return true;
    if (!IsOnnxOp(p, "DequantizeLinear") && !IsOnnxOp(p, "QuantizeLinear") && !IsOnnxOp(p, "Sub")) return false;
    v = p->input(0);
  }
  return false;
}

}  // namespace

std::optional<LayerNormMatch> LayerNormPattern::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  (void)graph;
  if (!IsOnnxOp(&anchor, "ReduceMean")) return std::nullopt;
  ir::Value* x = anchor.input(0);
  if (!IsFloatValue(x) || AfterTranspose(x)) return std::nullopt;
  const std::optional<int64_t> axis = TrailingReduceAxis(anchor, *x);
  if (!axis.has_value()) return std::nullopt;
  // mean -> Sub(x, mean) -> d, read by Pow(d, 2) and Div(d, .) only.
  const ir::Node* sub = SoleReader(anchor.output(0), "Sub", 1);
  if (sub == nullptr || sub->input(0) != x) return std::nullopt;
  const ir::Value* d = sub->output(0);
  if (!IsFloatValue(d) || d->is_graph_output() || d->uses().size() != 2) return std::nullopt;
  const ir::Node* pow = nullptr;
  const ir::Node* div = nullptr;
  for (const ir::Use& use : d->uses()) {
    if (IsOnnxOp(use.node, "Pow") && use.input_index == 0) pow = use.node;
    if (IsOnnxOp(use.node, "Div") && use.input_index == 0) div = use.node;
  }
  if (pow == nullptr || div == nullptr || ConstantScalar(pow->input(1)) != 2.0f) return std::nullopt;
  // var = ReduceMean(d^2) over the same axes, + epsilon, Sqrt, the Div's divisor.
  const ir::Node* rm2 = SoleReader(pow->output(0), "ReduceMean", 0);
  if (rm2 == nullptr || TrailingReduceAxis(*rm2, *pow->output(0)) != axis) return std::nullopt;
  const ir::Value* var = rm2->output(0);
  if (!IsFloatValue(var) || var->is_graph_output() || var->uses().size() != 1) return std::nullopt;
  const ir::Node* add_eps = var->uses()[0].node;
  if (!IsOnnxOp(add_eps, "Add")) return std::nullopt;
  const std::optional<float> epsilon = ConstantScalar(OtherInput(*add_eps, var));
  if (!epsilon.has_value()) return std::nullopt;
  const ir::Node* sqrt = SoleReader(add_eps->output(0), "Sqrt", 0);
  if (sqrt == nullptr || SoleReader(sqrt->output(0), "Div", 1) != div) return std::nullopt;
  // (d / std) * scale + bias, scale and bias one-dimensional constants of one length.
  const ir::Value* normalized = div->output(0);
  if (!IsFloatValue(normalized) || normalized->is_graph_output() || normalized->uses().size() != 1) return std::nullopt;
  const ir::Node* mul = normalized->uses()[0].node;
  if (!IsOnnxOp(mul, "Mul")) return std::nullopt;
  ir::Value* scale = ThroughIdentity(OtherInput(*mul, normalized));
  const ir::Value* scaled = mul->output(0);
  if (!IsVectorConstant(scale) || !IsFloatValue(scaled) || scaled->is_graph_output() || scaled->uses().size() != 1) {
    return std::nullopt;
  }
  const ir::Node* final_add = scaled->uses()[0].node;
  if (!IsOnnxOp(final_add, "Add") || !IsFloatValue(final_add->output(0))) return std::nullopt;
  ir::Value* bias = ThroughIdentity(OtherInput(*final_add, scaled));
  if (!IsVectorConstant(bias) || bias->initializer()->dims() != scale->initializer()->dims()) return std::nullopt;

  LayerNormMatch m;
  m.chain = {anchor.id(), sub->id(), pow->id(), rm2->id(), add_eps->id(), sqrt->id(), div->id(), mul->id(),
             final_add->id()};
  m.x = x;
  m.scale = scale;
  m.bias = bias;
  m.axis = *axis;
  m.epsilon = *epsilon;
  return m;
}

absl::Status LayerNormPattern::Rewrite(ir::Graph* graph, const LayerNormMatch& m) const {
  ir::AttributeMap attrs;
  attrs.Set("axis", m.axis);
  attrs.Set("epsilon", m.epsilon);
  return ReplaceFloatChain(graph, replacer_, m.chain, "LayerNormalization", {m.x, m.scale, m.bias}, std::move(attrs));
}

std::optional<SimplifiedLayerNormMatch> SimplifiedLayerNormPattern::Match(const ir::Graph& graph,
                                                                          const ir::Node& anchor) const {
  (void)graph;
  if (!IsOnnxOp(&anchor, "Pow") || ConstantScalar(anchor.input(1)) != 2.0f) return std::nullopt;
  ir::Value* x = anchor.input(0);
  if (!IsFloatValue(x) || AfterTranspose(x)) return std::nullopt;
  // mean(x^2) over trailing axes, + epsilon, Sqrt, the divisor of Div(x, .).
  const ir::Node* rm = SoleReader(anchor.output(0), "ReduceMean", 0);
  if (rm == nullptr || !IsFloatValue(anchor.output(0)) || anchor.output(0)->is_graph_output()) return std::nullopt;
  const std::optional<int64_t> axis = TrailingReduceAxis(*rm, *x);
  if (!axis.has_value()) return std::nullopt;
  const ir::Value* var = rm->output(0);
  if (!IsFloatValue(var) || var->is_graph_output() || var->uses().size() != 1) return std::nullopt;
  const ir::Node* add_eps = var->uses()[0].node;
  if (!IsOnnxOp(add_eps, "Add")) return std::nullopt;
  const std::optional<float> epsilon = ConstantScalar(OtherInput(*add_eps, var));
  if (!epsilon.has_value()) return std::nullopt;
  const ir::Node* sqrt = SoleReader(add_eps->output(0), "Sqrt", 0);
  if (sqrt == nullptr) return std::nullopt;
  const ir::Node* div = SoleReader(sqrt->output(0), "Div", 1);
  if (div == nullptr || div->input(0) != x) return std::nullopt;
  // (x / rms) * scale, scale a one-dimensional constant.
  const ir::Value* normalized = div->output(0);
  if (!IsFloatValue(normalized) || normalized->is_graph_output() || normalized->uses().size() != 1) return std::nullopt;
  const ir::Node* mul = normalized->uses()[0].node;
  if (!IsOnnxOp(mul, "Mul") || !IsFloatValue(mul->output(0))) return std::nullopt;
  ir::Value* scale = ThroughIdentity(OtherInput(*mul, normalized));
  if (!IsVectorConstant(scale)) return std::nullopt;

  SimplifiedLayerNormMatch m;
  m.chain = {anchor.id(), rm->id(), add_eps->id(), sqrt->id(), div->id(), mul->id()};
  m.x = x;
  m.scale = scale;
  m.axis = *axis;
  m.epsilon = *epsilon;
  return m;
}

absl::Status SimplifiedLayerNormPattern::Rewrite(ir::Graph* graph, const SimplifiedLayerNormMatch& m) const {
  ir::AttributeMap attrs;
  attrs.Set("axis", m.axis);
  attrs.Set("epsilon", m.epsilon);
  return ReplaceFloatChain(graph, replacer_, m.chain, kSimplifiedLayerNormOp, {m.x, m.scale}, std::move(attrs),
                           ir::kQfuseDomain);
}

}  // namespace qfuse::runtime::int8
