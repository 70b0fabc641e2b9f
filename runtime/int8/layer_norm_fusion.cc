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
// Sub (the LayerNorm's difference). The full pattern is never taken there: onnxruntime's
// transpose optimizer moves such a Transpose, into the convolution before it (channels-last
// QLinearConv) or past the chain, and either way the chain no longer reads a plain float
// value (a DequantizeLinear's copies, or a transposed tensor reduced over a non-last axis).
// The RMS tail is left only between two Transposes (BeforeTranspose).
bool AfterTranspose(const ir::Value* v) {
  for (int steps = 0; v != nullptr && v->producer() != nullptr && steps < 8; ++steps) {
    const ir::Node* p = v->producer();
    if (IsOnnxOp(p, "Transpose")) return true;
    if (!IsOnnxOp(p, "DequantizeLinear") && !IsOnnxOp(p, "QuantizeLinear") && !IsOnnxOp(p, "Sub")) return false;
    v = p->input(0);
  }
  return false;
}

// Whether `v` goes on into a Transpose, through its sole readers: the LayerNorm's bias Add and
// QuantizeLinear / DequantizeLinear pairs. A chain between two Transposes (ConvNeXt's
// LayerNorm2d: permute, LayerNorm, permute back) is the one the transpose optimizer turns
// around; a chain that only starts after one (Swin-T's patch embedding) keeps the last axis,
// and onnxruntime fuses its RMS tail.
bool BeforeTranspose(const ir::Value* v) {
  for (int steps = 0; v != nullptr && steps < 8; ++steps) {
    if (v->is_graph_output() || v->uses().size() != 1) return false;
    const ir::Node* reader = v->uses()[0].node;
    if (IsOnnxOp(reader, "Transpose")) return true;
    if (!IsOnnxOp(reader, "Add") && !IsOnnxOp(reader, "QuantizeLinear") && !IsOnnxOp(reader, "DequantizeLinear")) {
      return false;
    }
    v = reader->output(0);
  }
  return false;
}

// The normalising tail both chains share, from `pow` (Pow(x, 2)): ReduceMean over trailing
// axes -> Add epsilon -> Sqrt -> Div(x, .) -> Mul(., scale), every intermediate FLOAT, read by
// the chain alone and not a graph output; scale a one-dimensional constant (or an Identity of one).
struct NormTail {
  const ir::Node* reduce = nullptr;
  const ir::Node* add_eps = nullptr;
  const ir::Node* sqrt = nullptr;
  const ir::Node* div = nullptr;
  const ir::Node* mul = nullptr;
  ir::Value* scale = nullptr;
  int64_t axis = -1;
  float epsilon = 0.f;
};

std::optional<NormTail> MatchNormTail(const ir::Node& pow, const ir::Value* x) {
  if (!IsOnnxOp(&pow, "Pow") || pow.input(0) != x || ConstantScalar(pow.input(1)) != 2.0f) return std::nullopt;
  const ir::Value* square = pow.output(0);
  if (!IsFloatValue(square) || square->is_graph_output()) return std::nullopt;
  NormTail t;
  t.reduce = SoleReader(square, "ReduceMean", 0);
  if (t.reduce == nullptr) return std::nullopt;
  const std::optional<int64_t> axis = TrailingReduceAxis(*t.reduce, *square);
  if (!axis.has_value()) return std::nullopt;
  t.axis = *axis;
  const ir::Value* var = t.reduce->output(0);
  if (!IsFloatValue(var) || var->is_graph_output() || var->uses().size() != 1) return std::nullopt;
  t.add_eps = var->uses()[0].node;
  if (!IsOnnxOp(t.add_eps, "Add")) return std::nullopt;
  const std::optional<float> epsilon = ConstantScalar(OtherInput(*t.add_eps, var));
  if (!epsilon.has_value()) return std::nullopt;
  t.epsilon = *epsilon;
  t.sqrt = SoleReader(t.add_eps->output(0), "Sqrt", 0);
  if (t.sqrt == nullptr) return std::nullopt;
  t.div = SoleReader(t.sqrt->output(0), "Div", 1);
  if (t.div == nullptr || t.div->input(0) != x) return std::nullopt;
  const ir::Value* normalized = t.div->output(0);
  if (!IsFloatValue(normalized) || normalized->is_graph_output() || normalized->uses().size() != 1) return std::nullopt;
  t.mul = normalized->uses()[0].node;
  if (!IsOnnxOp(t.mul, "Mul") || !IsFloatValue(t.mul->output(0))) return std::nullopt;
  t.scale = ThroughIdentity(OtherInput(*t.mul, normalized));
  if (!IsVectorConstant(t.scale)) return std::nullopt;
  return t;
}

ir::AttributeMap NormAttrs(int64_t axis, float epsilon) {
  ir::AttributeMap attrs;
  attrs.Set("axis", axis);
  attrs.Set("epsilon", epsilon);
  return attrs;
}

}  // namespace

std::optional<LayerNormMatch> LayerNormPattern::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  (void)graph;
  if (!IsOnnxOp(&anchor, "ReduceMean")) return std::nullopt;
  ir::Value* x = anchor.input(0);
  // x copied per reader (a DequantizeLinear's output): onnxruntime's LayerNormFusion leaves the
  // chain and its SimplifiedLayerNormFusion takes the tail from the Sub, which
  // SimplifiedLayerNormPattern mirrors (Swin-T's first LayerNorm after each patch merging).
  if (!IsFloatValue(x) || CopiedPerReader(x) || AfterTranspose(x)) return std::nullopt;
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
  if (pow == nullptr || div == nullptr) return std::nullopt;
  // var = ReduceMean(d^2) over the same axes, + epsilon, Sqrt, the Div's divisor; * scale.
  const std::optional<NormTail> tail = MatchNormTail(*pow, d);
  if (!tail.has_value() || tail->axis != *axis || tail->div != div) return std::nullopt;
  // + bias, a one-dimensional constant of the scale's length.
  const ir::Value* scaled = tail->mul->output(0);
  if (scaled->is_graph_output() || scaled->uses().size() != 1) return std::nullopt;
  const ir::Node* final_add = scaled->uses()[0].node;
  if (!IsOnnxOp(final_add, "Add") || !IsFloatValue(final_add->output(0))) return std::nullopt;
  ir::Value* bias = ThroughIdentity(OtherInput(*final_add, scaled));
  if (!IsVectorConstant(bias) || bias->initializer()->dims() != tail->scale->initializer()->dims()) {
    return std::nullopt;
  }

  LayerNormMatch m;
  m.chain = {anchor.id(),         sub->id(),         pow->id(),        tail->reduce->id(), tail->add_eps->id(),
             tail->sqrt->id(),    tail->div->id(),   tail->mul->id(),  final_add->id()};
  m.x = x;
  m.scale = tail->scale;
  m.bias = bias;
  m.axis = *axis;
  m.epsilon = tail->epsilon;
  return m;
}

absl::Status LayerNormPattern::Rewrite(ir::Graph* graph, const LayerNormMatch& m) const {
  return ReplaceFloatChain(graph, replacer_, m.chain, "LayerNormalization", {m.x, m.scale, m.bias},
                           NormAttrs(m.axis, m.epsilon));
}

std::optional<SimplifiedLayerNormMatch> SimplifiedLayerNormPattern::Match(const ir::Graph& graph,
                                                                           const ir::Node& anchor) const {
  (void)graph;
  ir::Value* x = anchor.input(0);
  if (!IsFloatValue(x)) return std::nullopt;
  const std::optional<NormTail> tail = MatchNormTail(anchor, x);
  if (!tail.has_value() || (AfterTranspose(x) && BeforeTranspose(tail->mul->output(0)))) return std::nullopt;
  SimplifiedLayerNormMatch m;
  m.chain = {anchor.id(), tail->reduce->id(), tail->add_eps->id(), tail->sqrt->id(), tail->div->id(), tail->mul->id()};
  m.x = x;
  m.scale = tail->scale;
  m.axis = tail->axis;
  m.epsilon = tail->epsilon;
  return m;
}

absl::Status SimplifiedLayerNormPattern::Rewrite(ir::Graph* graph, const SimplifiedLayerNormMatch& m) const {
  return ReplaceFloatChain(graph, replacer_, m.chain, kSimplifiedLayerNormOp, {m.x, m.scale},
                           NormAttrs(m.axis, m.epsilon), ir::kQfuseDomain);
}

}  // namespace qfuse::runtime::int8
