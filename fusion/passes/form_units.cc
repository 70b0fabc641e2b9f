#include "fusion/passes/form_units.h"

#include <limits>
#include <vector>

#include "fusion/rewrite_util.h"
#include "ir/fused_unit.h"

namespace qfuse::fusion {
namespace {

bool IsStandard(const ir::Node& n, const char* op) { return n.domain().empty() && n.op_type() == op; }

// Same rank and the same dims (known values or identical symbols).
bool SameShape(const ir::Value& a, const ir::Value& b) {
  const ir::Shape& sa = a.type().shape;
  const ir::Shape& sb = b.type().shape;
  if (!sa.rank_known || !sb.rank_known || sa.rank() != sb.rank()) return false;
  for (int64_t i = 0; i < sa.rank(); ++i) {
    const ir::Dim& x = sa.dims[i];
    const ir::Dim& y = sb.dims[i];
    const bool same = x.is_known() ? x.value == y.value : (!x.symbol.empty() && x.symbol == y.symbol);
    if (!same) return false;
  }
  return true;
}

// Scalar FLOAT constant input `index` of `node` (absent -> `fallback`), or nullopt.
std::optional<float> ScalarBound(const ir::Node& node, int index, float fallback) {
  if (node.input(index) == nullptr) return fallback;
  auto v = FloatConstant(node, index, 1);
  if (!v.has_value()) return std::nullopt;
  return (*v)[0];
}

}  // namespace

std::optional<UnitMatch> FormUnitsPass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  const bool is_conv = IsStandard(anchor, "Conv") || IsStandard(anchor, "ConvTranspose");
  const bool is_gemm = IsStandard(anchor, "Gemm");
  const bool is_matmul = IsStandard(anchor, "MatMul");
  if (!is_conv && !is_gemm && !is_matmul) return std::nullopt;
  const ir::Tensor* w = ConstantInput(anchor, 1);
  if (w == nullptr || w->dtype() != ir::DataType::kFloat32) return std::nullopt;
  if (anchor.input(0)->type().dtype != ir::DataType::kFloat32) return std::nullopt;
  if (is_conv && anchor.input(2) != nullptr && ConstantInput(anchor, 2) == nullptr) return std::nullopt;
  if (is_gemm && anchor.input(2) != nullptr && ConstantInput(anchor, 2) == nullptr) return std::nullopt;
  if (is_matmul && w->rank() != 2) return std::nullopt;

  UnitMatch m{const_cast<ir::Node*>(&anchor), nullptr, 0, nullptr, 0, nullptr, 0.f, 0.f};
  ir::Value* current = anchor.output(0);
  ir::Node* next = SoleConsumer(*current);
  if (is_matmul && next != nullptr && IsStandard(*next, "Add")) {
    const int bias_index = next->input(0) == current ? 1 : 0;
    const ir::Tensor* b = ConstantInput(*next, bias_index);
    if (b != nullptr && b->dtype() == ir::DataType::kFloat32 && b->num_elements() == w->dims()[1] &&
        (b->rank() == 0 || b->dims().back() == b->num_elements())) {
      m.bias_add = next;
      m.bias_index = bias_index;
      current = next->output(0);
      next = SoleConsumer(*current);
    }
  }
  if (next != nullptr && IsStandard(*next, "Add") && next->inputs().size() == 2 &&
      next->input(0) != next->input(1)) {
    const int residual_index = next->input(0) == current ? 1 : 0;
    const ir::Value* residual = next->input(residual_index);
    // The residual is added without broadcasting, so it must have the output's shape.
    if (residual->type().dtype == ir::DataType::kFloat32 && SameShape(*residual, *current) &&
        SameShape(*next->output(0), *current)) {
      m.residual_add = next;
      m.residual_index = residual_index;
      current = next->output(0);
      next = SoleConsumer(*current);
    }
  }
  if (next != nullptr && IsStandard(*next, "Relu")) {
    m.activation = next;
  } else if (next != nullptr && IsStandard(*next, "Clip") && next->input(0) == current) {
    auto lo = ScalarBound(*next, 1, std::numeric_limits<float>::lowest());
    auto hi = ScalarBound(*next, 2, std::numeric_limits<float>::max());
    if (lo.has_value() && hi.has_value() && *lo <= *hi) {
      m.activation = next;
      m.clip_min = *lo;
      m.clip_max = *hi;
    }
  }
  return m;
}

absl::Status FormUnitsPass::Rewrite(ir::Graph* graph, const UnitMatch& m) const {
  ir::AttributeMap attrs = m.base->attrs();
  attrs.Set(ir::kUnitBaseOpAttr, m.base->op_type());
  if (m.activation == nullptr) {
    attrs.Set(ir::kUnitActivationAttr, std::string("none"));
  } else if (m.activation->op_type() == "Relu") {
    attrs.Set(ir::kUnitActivationAttr, std::string("relu"));
  } else if (m.clip_min == 0.f && m.clip_max == 6.f) {
    attrs.Set(ir::kUnitActivationAttr, std::string("relu6"));
  } else {
    attrs.Set(ir::kUnitActivationAttr, std::string("clip"));
    attrs.Set(ir::kUnitClipMinAttr, m.clip_min);
    attrs.Set(ir::kUnitClipMaxAttr, m.clip_max);
  }
  ir::Value* bias = m.bias_add != nullptr ? m.bias_add->input(m.bias_index) : m.base->input(2);
  ir::Value* residual = m.residual_add != nullptr ? m.residual_add->input(m.residual_index) : nullptr;
  std::vector<ir::Node*> chain = {m.base};
  ir::Value* last = m.base->output(0);
  for (ir::Node* n : {m.bias_add, m.residual_add, m.activation}) {
    if (n != nullptr) {
      chain.push_back(n);
      last = n->output(0);
    }
  }
  QFUSE_ASSIGN_OR_RETURN(
      ir::Node * unit,
      graph->AddNode(ir::kUnitOpType, m.base->name(),
                     {m.base->input(0), m.base->input(1), bias, residual},
                     {graph->UniqueValueName(last->name() + "_unit")}, attrs, ir::kQfuseDomain));
  graph->RemoveTrailingNullInputs(unit);
  // Remove the chain back to front so each node's output is unused when it goes.
  std::vector<ir::Node*> dead(chain.rbegin(), chain.rend());
  const std::string name = m.base->name();
  QFUSE_RETURN_IF_ERROR(ReplaceAndRemove(graph, last, unit->output(0), dead));
  return graph->RenameNode(unit, name);  // the unit takes its base op's name
}

}  // namespace qfuse::fusion
