#include "fusion/passes/fuse_hard_swish.h"

#include "base/status_macros.h"
#include "fusion/rewrite_util.h"

namespace qfuse::fusion {
namespace {

// Whether input `index` of `node` is a FLOAT scalar constant equal to `value` whose rank is 0,
// or at most that of the node's other operands (so that it does not raise the output's rank).
bool IsScalar(const ir::Node& node, int index, float value) {
  std::optional<std::vector<float>> v = FloatConstant(node, index, 1);
  if (!v.has_value() || (*v)[0] != value) return false;
  const int64_t rank = ConstantInput(node, index)->rank();
  if (rank == 0) return true;
  const ir::Shape& shape = node.input(0)->type().shape;  // input 0: the chain value (or the constant)
  const ir::Value* other = node.input(index == 0 ? 1 : 0);
  if (other == nullptr) return true;  // Clip's bounds: Clip keeps its input's shape
  const ir::Shape& other_shape = node.op_type() == "Clip" ? shape : other->type().shape;
  return other_shape.rank_known && rank <= other_shape.rank();
}

// The index (0 or 1) of `node`'s input that is not the scalar constant `value`, or -1.
int OtherThanScalar(const ir::Node& node, float value) {
  if (node.inputs().size() != 2) return -1;
  if (IsScalar(node, 1, value)) return 0;
  if (IsScalar(node, 0, value)) return 1;
  return -1;
}

// The node producing `value` when it is a default-domain `op_type` read only by `reader`.
const ir::Node* SoleProducer(const ir::Value* value, const char* op_type) {
  if (value == nullptr || value->producer() == nullptr) return nullptr;
  const ir::Node* n = value->producer();
  if (n->op_type() != op_type || !n->domain().empty() || SoleConsumer(*value) == nullptr) return nullptr;
  return n;
}

}  // namespace

std::optional<HardSwishMatch> FuseHardSwishPass::Match(const ir::Graph&, const ir::Node& anchor) const {
  if (!anchor.domain().empty() || anchor.inputs().size() != 2) return std::nullopt;
  // x * clip / 6 as Div(m, 6) or Mul(m, fl(1/6)) (either order for the Mul).
  int m_index = -1;
  if (anchor.op_type() == "Div") {
    m_index = IsScalar(anchor, 1, 6.f) ? 0 : -1;
  } else {
    m_index = OtherThanScalar(anchor, 1.f / 6.f);
  }
  if (m_index < 0) return std::nullopt;
  const ir::Node* mul = SoleProducer(anchor.input(m_index), "Mul");
  if (mul == nullptr || mul->inputs().size() != 2) return std::nullopt;
  for (int clip_index : {0, 1}) {
    const ir::Node* clip = SoleProducer(mul->input(clip_index), "Clip");
    if (clip == nullptr || clip->inputs().size() != 3 || !IsScalar(*clip, 1, 0.f) || !IsScalar(*clip, 2, 6.f)) continue;
    const ir::Node* add = SoleProducer(clip->input(0), "Add");
    if (add == nullptr) continue;
    const int x_index = OtherThanScalar(*add, 3.f);
    const ir::Value* x = x_index < 0 ? nullptr : add->input(x_index);
    if (x == nullptr || x != mul->input(1 - clip_index)) continue;
    return HardSwishMatch{add->id(), clip->id(), mul->id(), anchor.id()};
  }
  return std::nullopt;
}

absl::Status FuseHardSwishPass::Rewrite(ir::Graph* graph, const HardSwishMatch& match) const {
  ir::Node* add = graph->FindNode(match.add);
  ir::Node* clip = graph->FindNode(match.clip);
  ir::Node* mul = graph->FindNode(match.mul);
  ir::Node* scale = graph->FindNode(match.scale);
  ir::Value* x = add->input(OtherThanScalar(*add, 3.f));
  const std::string out_name = scale->output(0)->name();
  QFUSE_ASSIGN_OR_RETURN(ir::Node * hard_swish, graph->AddNode("HardSwish", scale->name() + "_hard_swish", {x},
                                                               {graph->UniqueValueName(out_name + "_hard_swish")}));
  return ReplaceAndRemove(graph, scale->output(0), hard_swish->output(0), {scale, mul, clip, add});
}

}  // namespace qfuse::fusion
