#include "runtime/int8/channel_affine_fusion.h"

#include <utility>

#include "ir/fused_unit.h"
#include "runtime/int8/float_chain.h"
#include "runtime/int8/int8_ops.h"

namespace qfuse::runtime::int8 {
namespace {

// x's channel count on axis 1, when its rank (>= 3: the kernel's rows are the values of one
// channel of one image, and a rank-2 x would give rows of one value) and that dim are known.
std::optional<int64_t> Channels(const ir::Value* x) {
  const ir::Shape& shape = x->type().shape;
  if (!shape.rank_known || shape.rank() < 3 || !shape.dims[1].is_known()) return std::nullopt;
  return shape.dims[1].value;
}

// A FLOAT constant that broadcasts along axis 1 of a rank-`rank` tensor with `channels`
// channels without changing its shape: [C, 1, ...] of rank - 1 dims or [1, C, 1, ...] of rank.
bool IsChannelConstant(const ir::Value* v, int64_t rank, int64_t channels) {
  if (v == nullptr || !v->is_constant() || v->initializer()->dtype() != ir::DataType::kFloat32) return false;
  const std::vector<int64_t>& d = v->initializer()->dims();
  const int64_t lead = static_cast<int64_t>(d.size()) == rank ? 1 : 0;
  if (static_cast<int64_t>(d.size()) != rank - 1 + lead || (lead == 1 && d[0] != 1)) return false;
  for (size_t i = lead; i < d.size(); ++i) {
    if (d[i] != (i == static_cast<size_t>(lead) ? channels : 1)) return false;
  }
  return true;
}

}  // namespace

std::optional<ChannelAffineMatch> ChannelAffinePattern::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  (void)graph;
  if (!IsOnnxOp(&anchor, "Mul") || anchor.inputs().size() != 2) return std::nullopt;
  ChannelAffineMatch m;
  for (int i : {0, 1}) {
    if (anchor.input(i) != nullptr && !anchor.input(i)->is_constant()) m.x = anchor.input(i);
  }
  if (m.x == nullptr || !IsFloatValue(m.x)) return std::nullopt;
  const std::optional<int64_t> channels = Channels(m.x);
  if (!channels.has_value()) return std::nullopt;
  const int64_t rank = m.x->type().shape.rank();
  m.scale = OtherInput(anchor, m.x);
  if (!IsChannelConstant(m.scale, rank, *channels)) return std::nullopt;
  const ir::Node* add = SoleBinaryReader(anchor.output(0), "Add");
  if (add == nullptr) return std::nullopt;
  m.shift = OtherInput(*add, anchor.output(0));
  if (!IsChannelConstant(m.shift, rank, *channels) || !IsFloatValue(add->output(0))) return std::nullopt;
  m.chain = {anchor.id(), add->id()};
  const ir::Node* relu = SoleReader(add->output(0), "Relu", 0);
  if (relu != nullptr && IsFloatValue(relu->output(0))) {
    m.chain.push_back(relu->id());
    m.relu = true;
  }
  return m;
}

absl::Status ChannelAffinePattern::Rewrite(ir::Graph* graph, const ChannelAffineMatch& m) const {
  ir::AttributeMap attrs;
  attrs.Set(kChannelAffineReluAttr, static_cast<int64_t>(m.relu));
  return ReplaceFloatChain(graph, replacer_, m.chain, kChannelAffineOp, {m.x, m.scale, m.shift}, std::move(attrs),
                           ir::kQfuseDomain);
}

}  // namespace qfuse::runtime::int8
