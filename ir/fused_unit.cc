#include "ir/fused_unit.h"

#include <immintrin.h>

#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace qfuse::ir {

bool IsUnit(const Node& node) { return node.domain() == kQfuseDomain && node.op_type() == kUnitOpType; }

namespace {

constexpr UnitActivation kAllActivations[] = {
    UnitActivation::kNone,      UnitActivation::kRelu,        UnitActivation::kRelu6,
    UnitActivation::kClip,      UnitActivation::kHardSwish,   UnitActivation::kHardSigmoid,
    UnitActivation::kSigmoid,   UnitActivation::kSilu,        UnitActivation::kLeakyRelu};

// HardSigmoid max(0, min(1, alpha * x + beta)) of eight values per AVX2 step, then times x for
// HardSwish: the scalar expressions' operations and order (no FMA; MINPS(t, 1) is std::min(1,
// t) and MAXPS(u, 0) is std::max(0, u), NaN included). Returns how many it wrote.
template <bool kTimesX>
__attribute__((target("avx2"))) int64_t HardSigmoidRowAvx2(float* v, int64_t n, float alpha, float beta) {
  const __m256 a = _mm256_set1_ps(alpha), b = _mm256_set1_ps(beta);
  const __m256 one = _mm256_set1_ps(1.f), zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(v + i);
    // HardSwish multiplies x * alpha, HardSigmoid alpha * x: the same IEEE product.
    const __m256 gate = _mm256_max_ps(_mm256_min_ps(_mm256_add_ps(_mm256_mul_ps(x, a), b), one), zero);
    _mm256_storeu_ps(v + i, kTimesX ? _mm256_mul_ps(x, gate) : gate);
  }
  return i;
}

// ReLU6: the one clamp with its own name.
constexpr ClampRange kRelu6Range = {0.f, 6.f};

}  // namespace

const char* UnitBaseOpName(UnitBaseOp op) {
  switch (op) {
    case UnitBaseOp::kConv: return "Conv";
    case UnitBaseOp::kConvTranspose: return "ConvTranspose";
    case UnitBaseOp::kGemm: return "Gemm";
    case UnitBaseOp::kMatMul: return "MatMul";
  }
  return "?";
}

std::optional<UnitBaseOp> ParseUnitBaseOp(absl::string_view op_type) {
  for (UnitBaseOp op : kUnitBaseOps) {
    if (op_type == UnitBaseOpName(op)) return op;
  }
  return std::nullopt;
}

std::optional<UnitBaseOp> UnitBaseOpOf(const Node& node) {
  if (!node.domain().empty()) return std::nullopt;
  return ParseUnitBaseOp(node.op_type());
}

absl::StatusOr<int64_t> WeightOutputChannelAxis(UnitBaseOp op, const AttributeMap& attrs) {
  switch (op) {
    case UnitBaseOp::kConv: return 0;
    case UnitBaseOp::kMatMul: return 1;
    case UnitBaseOp::kGemm: {
      QFUSE_ASSIGN_OR_RETURN(const int64_t trans_b, attrs.GetInt("transB", 0));
      return trans_b != 0 ? 0 : 1;
    }
    case UnitBaseOp::kConvTranspose: {
      QFUSE_ASSIGN_OR_RETURN(const int64_t group, attrs.GetInt("group", 1));
      return group == 1 ? 1 : -1;
    }
  }
  return -1;
}

const char* UnitActivationName(UnitActivation activation) {
  switch (activation) {
    case UnitActivation::kNone: return "none";
    case UnitActivation::kRelu: return "relu";
    case UnitActivation::kRelu6: return "relu6";
    case UnitActivation::kClip: return "clip";
    case UnitActivation::kHardSwish: return "hard_swish";
    case UnitActivation::kHardSigmoid: return "hard_sigmoid";
    case UnitActivation::kSigmoid: return "sigmoid";
    case UnitActivation::kSilu: return "silu";
    case UnitActivation::kLeakyRelu: return "leaky_relu";
  }
  return "?";
}

bool IsClampActivation(UnitActivation activation) {
  return activation == UnitActivation::kNone || activation == UnitActivation::kRelu ||
         activation == UnitActivation::kRelu6 || activation == UnitActivation::kClip;
}

ClampRange UnitSpec::ClampBounds() const {
  constexpr float kLowest = std::numeric_limits<float>::lowest(), kMax = std::numeric_limits<float>::max();
  switch (activation) {
    case UnitActivation::kRelu: return {0.f, kMax};
    case UnitActivation::kRelu6:
    case UnitActivation::kClip: return {clip_min, clip_max};
    default: return {kLowest, kMax};
  }
}

UnitSpec ClipSpec(float lo, float hi) {
  UnitSpec spec;
  spec.activation = lo == kRelu6Range.lo && hi == kRelu6Range.hi ? UnitActivation::kRelu6 : UnitActivation::kClip;
  spec.clip_min = lo;
  spec.clip_max = hi;
  return spec;
}

void WriteUnitSpec(const UnitSpec& spec, AttributeMap* attrs) {
  for (const char* own : {kUnitClipMinAttr, kUnitClipMaxAttr, kUnitAlphaAttr, kUnitBetaAttr}) attrs->Erase(own);
  attrs->Set(kUnitBaseOpAttr, std::string(UnitBaseOpName(spec.base_op)));
  attrs->Set(kUnitActivationAttr, std::string(UnitActivationName(spec.activation)));
  switch (spec.activation) {
    case UnitActivation::kClip:
      attrs->Set(kUnitClipMinAttr, spec.clip_min);
      attrs->Set(kUnitClipMaxAttr, spec.clip_max);
      break;
    case UnitActivation::kHardSigmoid:
      attrs->Set(kUnitAlphaAttr, spec.alpha);
      attrs->Set(kUnitBetaAttr, spec.beta);
      break;
    case UnitActivation::kLeakyRelu: attrs->Set(kUnitAlphaAttr, spec.alpha); break;
    default: break;
  }
}

absl::StatusOr<UnitSpec> ReadUnitActivation(const Node& node) {
  UnitSpec spec;
  QFUSE_ASSIGN_OR_RETURN(std::string activation, node.attrs().GetString(kUnitActivationAttr, "none"));
  bool known = false;
  for (UnitActivation a : kAllActivations) {
    if (activation == UnitActivationName(a)) {
      spec.activation = a;
      known = true;
    }
  }
  if (!known) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": unit activation '", activation, "' is unknown"));
  }
  switch (spec.activation) {
    case UnitActivation::kRelu6:
      spec.clip_min = kRelu6Range.lo;
      spec.clip_max = kRelu6Range.hi;
      break;
    case UnitActivation::kClip: {
      QFUSE_ASSIGN_OR_RETURN(spec.clip_min, node.attrs().GetFloat(kUnitClipMinAttr, 0.f));
      QFUSE_ASSIGN_OR_RETURN(spec.clip_max, node.attrs().GetFloat(kUnitClipMaxAttr, 0.f));
      break;
    }
    case UnitActivation::kHardSigmoid: {
      QFUSE_ASSIGN_OR_RETURN(spec.alpha, node.attrs().GetFloat(kUnitAlphaAttr, 0.2f));
      QFUSE_ASSIGN_OR_RETURN(spec.beta, node.attrs().GetFloat(kUnitBetaAttr, 0.5f));
      break;
    }
    case UnitActivation::kLeakyRelu: {
      QFUSE_ASSIGN_OR_RETURN(spec.alpha, node.attrs().GetFloat(kUnitAlphaAttr, 0.01f));
      break;
    }
    default: break;
  }
  return spec;
}

absl::StatusOr<UnitSpec> ReadUnitSpec(const Node& node) {
  QFUSE_ASSIGN_OR_RETURN(UnitSpec spec, ReadUnitActivation(node));
  QFUSE_ASSIGN_OR_RETURN(std::string base_op, node.attrs().GetString(kUnitBaseOpAttr, ""));
  std::optional<UnitBaseOp> parsed = ParseUnitBaseOp(base_op);
  if (!parsed.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": unit base op '", base_op, "' is unknown"));
  }
  spec.base_op = *parsed;
  if (node.input(kUnitX) == nullptr || node.input(kUnitW) == nullptr || node.outputs().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": a unit needs X, W and one output"));
  }
  return spec;
}

void ApplyUnitActivation(const UnitSpec& spec, absl::Span<float> values, bool vector) {
  float* v = values.data();
  const int64_t n = static_cast<int64_t>(values.size());
  auto apply = [&](auto fn) {
    for (int64_t i = 0; i < n; ++i) v[i] = fn(v[i]);
  };
  // One loop per kind, so the simple ones vectorise.
  switch (spec.activation) {
    case UnitActivation::kNone: return;
    case UnitActivation::kRelu: return apply([](float x) { return x > 0.f ? x : 0.f; });
    case UnitActivation::kRelu6:
    case UnitActivation::kClip: {
      const float lo = spec.clip_min, hi = spec.clip_max;
      return apply([lo, hi](float x) { return std::min(std::max(x, lo), hi); });
    }
    case UnitActivation::kLeakyRelu: {
      const float alpha = spec.alpha;
      return apply([alpha](float x) { return x < 0.f ? alpha * x : x; });
    }
    case UnitActivation::kHardSwish: {
      const int64_t done = vector ? HardSigmoidRowAvx2<true>(v, n, kHardSwishAlpha, 0.5f) : 0;
      for (int64_t i = done; i < n; ++i) v[i] = v[i] * std::max(0.f, std::min(1.f, v[i] * kHardSwishAlpha + 0.5f));
      return;
    }
    case UnitActivation::kHardSigmoid: {
      const float alpha = spec.alpha, beta = spec.beta;
      const int64_t done = vector ? HardSigmoidRowAvx2<false>(v, n, alpha, beta) : 0;
      for (int64_t i = done; i < n; ++i) v[i] = std::max(0.f, std::min(1.f, alpha * v[i] + beta));
      return;
    }
    case UnitActivation::kSigmoid: return LogisticRow(v, v, n, vector);
    case UnitActivation::kSilu: return SiluRow(v, v, n, vector);
    default: {
      const UnitSpec s = spec;
      return apply([&s](float x) { return ApplyUnitActivation(s, x); });
    }
  }
}

AttributeMap BaseOpAttributes(const Node& node) {
  AttributeMap attrs = node.attrs();
  for (const char* own : {kUnitBaseOpAttr, kUnitActivationAttr, kUnitClipMinAttr, kUnitClipMaxAttr, kUnitAlphaAttr,
                          kUnitBetaAttr}) {
    attrs.Erase(own);
  }
  return attrs;
}

absl::StatusOr<Node*> ExpandUnit(Graph* graph, Node* unit) {
  QFUSE_ASSIGN_OR_RETURN(UnitSpec spec, ReadUnitSpec(*unit));
  const std::string base = unit->name();
  Value* out = unit->output(0);
  const std::string out_name = out->name();
  const TensorType out_type = out->type();
  auto fresh = [&](const std::string& suffix) { return graph->UniqueValueName(absl::StrCat(base, suffix)); };

  std::vector<Value*> base_inputs = {unit->input(kUnitX), unit->input(kUnitW)};
  const bool bias_after = BiasFollowsBase(spec.base_op);
  if (!bias_after && unit->input(kUnitBias) != nullptr) base_inputs.push_back(unit->input(kUnitBias));
  QFUSE_ASSIGN_OR_RETURN(Node * op, graph->AddNode(UnitBaseOpName(spec.base_op), base, base_inputs, {fresh("_acc")},
                                                   BaseOpAttributes(*unit)));
  Value* current = op->output(0);
  current->mutable_type().dtype = out_type.dtype;
  auto add_node = [&](const std::string& op_type, const std::string& suffix, std::vector<Value*> inputs,
                      AttributeMap attrs = {}) -> absl::Status {
    QFUSE_ASSIGN_OR_RETURN(Node * n, graph->AddNode(op_type, base + suffix, inputs, {fresh(suffix)}, attrs));
    current = n->output(0);
    current->mutable_type().dtype = out_type.dtype;
    return absl::OkStatus();
  };
  if (bias_after && unit->input(kUnitBias) != nullptr) {
    QFUSE_RETURN_IF_ERROR(add_node("Add", "_bias", {current, unit->input(kUnitBias)}));
  }
  if (unit->input(kUnitResidual) != nullptr) {
    QFUSE_RETURN_IF_ERROR(add_node("Add", "_residual", {current, unit->input(kUnitResidual)}));
  }
  switch (spec.activation) {
    case UnitActivation::kNone: break;
    case UnitActivation::kRelu: {
      QFUSE_RETURN_IF_ERROR(add_node("Relu", "_relu", {current}));
      break;
    }
    case UnitActivation::kRelu6:
    case UnitActivation::kClip: {
      QFUSE_ASSIGN_OR_RETURN(Value * lo, graph->AddConstant(fresh("_clip_min"), Tensor::Scalar<float>(spec.clip_min)));
      QFUSE_ASSIGN_OR_RETURN(Value * hi, graph->AddConstant(fresh("_clip_max"), Tensor::Scalar<float>(spec.clip_max)));
      QFUSE_RETURN_IF_ERROR(add_node("Clip", "_clip", {current, lo, hi}));
      break;
    }
    case UnitActivation::kHardSwish: {
      QFUSE_RETURN_IF_ERROR(add_node("HardSwish", "_hard_swish", {current}));
      break;
    }
    case UnitActivation::kHardSigmoid: {
      AttributeMap attrs;
      attrs.Set("alpha", spec.alpha);
      attrs.Set("beta", spec.beta);
      QFUSE_RETURN_IF_ERROR(add_node("HardSigmoid", "_hard_sigmoid", {current}, attrs));
      break;
    }
    case UnitActivation::kSigmoid: {
      QFUSE_RETURN_IF_ERROR(add_node("Sigmoid", "_sigmoid", {current}));
      break;
    }
    case UnitActivation::kSilu: {
      Value* x = current;
      QFUSE_RETURN_IF_ERROR(add_node("Sigmoid", "_sigmoid", {x}));
      QFUSE_RETURN_IF_ERROR(add_node("Mul", "_silu", {x, current}));
      break;
    }
    case UnitActivation::kLeakyRelu: {
      AttributeMap attrs;
      attrs.Set("alpha", spec.alpha);
      QFUSE_RETURN_IF_ERROR(add_node("LeakyRelu", "_leaky_relu", {current}, attrs));
      break;
    }
  }
  graph->ReplaceAllUsesWith(out, current);
  QFUSE_RETURN_IF_ERROR(graph->RemoveNode(unit));
  QFUSE_RETURN_IF_ERROR(graph->RenameNode(op, base));  // the base op keeps the unit's name
  QFUSE_RETURN_IF_ERROR(graph->RenameValue(current, out_name));
  current->mutable_type() = out_type;
  return op;
}

absl::Status ExpandUnits(Graph* graph) {
  for (Node* node : graph->nodes()) {
    if (IsUnit(*node)) QFUSE_RETURN_IF_ERROR(ExpandUnit(graph, node).status());
  }
  return absl::OkStatus();
}

}  // namespace qfuse::ir
