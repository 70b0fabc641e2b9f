#include "fusion/passes/merge_branches.h"

#include <algorithm>
#include <vector>

#include "fusion/rewrite_util.h"

namespace qfuse::fusion {
namespace {

bool IsStandard(const ir::Node& n, const char* op) { return n.domain().empty() && n.op_type() == op; }

// A branch as a convolution: weight [cout, cin_per_group, kernel...] over x.
struct Geometry {
  int64_t cout = 0;
  int64_t cin_per_group = 0;
  int64_t group = 1;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> pads;  // begins then ends
};

int64_t Spatial(const Geometry& g) { return static_cast<int64_t>(g.kernel.size()); }

std::optional<Geometry> ConvGeometry(const ir::Node& conv) {
  if (!IsStandard(conv, "Conv") || conv.outputs().size() != 1) return std::nullopt;
  const ir::Tensor* w = ConstantInput(conv, 1);
  if (w == nullptr || w->dtype() != ir::DataType::kFloat32 || w->rank() < 3) return std::nullopt;
  if (conv.input(2) != nullptr && !FloatConstant(conv, 2, w->dims()[0]).has_value()) return std::nullopt;
  const int64_t spatial = w->rank() - 2;
  Geometry g;
  g.cout = w->dims()[0];
  g.cin_per_group = w->dims()[1];
  g.kernel.assign(w->dims().begin() + 2, w->dims().end());
  const ir::AttributeMap& a = conv.attrs();
  auto auto_pad = a.GetString("auto_pad", "NOTSET");
  auto group = a.GetInt("group", 1);
  auto strides = a.GetInts("strides", std::vector<int64_t>(spatial, 1));
  auto pads = a.GetInts("pads", std::vector<int64_t>(2 * spatial, 0));
  auto dilations = a.GetInts("dilations", std::vector<int64_t>(spatial, 1));
  auto kernel_shape = a.GetInts("kernel_shape", g.kernel);
  if (!auto_pad.ok() || (*auto_pad != "NOTSET" && *auto_pad != "VALID") || !group.ok() || !strides.ok() ||
      !pads.ok() || !dilations.ok() || !kernel_shape.ok()) {
    return std::nullopt;
  }
  if (*auto_pad == "VALID") pads = std::vector<int64_t>(2 * spatial, 0);
  if (static_cast<int64_t>(strides->size()) != spatial || static_cast<int64_t>(pads->size()) != 2 * spatial ||
      *kernel_shape != g.kernel || *dilations != std::vector<int64_t>(spatial, 1) || *group < 1) {
    return std::nullopt;
  }
  g.group = *group;
  g.strides = *strides;
  g.pads = *pads;
  return g;
}

// The identity on C channels as a 1x..x1 convolution with `like`'s group count.
Geometry IdentityGeometry(const Geometry& like) {
  Geometry g = like;
  g.kernel.assign(Spatial(like), 1);
  g.strides.assign(Spatial(like), 1);
  g.pads.assign(2 * Spatial(like), 0);
  return g;
}

// A constant that broadcasts per channel (axis 1) over a rank-`rank` tensor with `c`
// channels, expanded to c values.
std::optional<std::vector<float>> PerChannel(const ir::Node& node, int index, int64_t rank, int64_t c) {
  const ir::Tensor* t = ConstantInput(node, index);
  if (t == nullptr || t->dtype() != ir::DataType::kFloat32 || t->rank() > rank) return std::nullopt;
  const int64_t offset = rank - t->rank();
  for (int64_t i = 0; i < t->rank(); ++i) {
    const bool channel_axis = i + offset == 1;
    if (t->dims()[i] != 1 && !(channel_axis && t->dims()[i] == c)) return std::nullopt;
  }
  auto v = t->values<float>();
  std::vector<float> out(c);
  for (int64_t i = 0; i < c; ++i) out[i] = v.size() == 1 ? v[0] : v[i];
  return out;
}

// Mul(x, s) -> Add(., t) with per-channel constants, feeding only the branch Add.
std::optional<Branch> ScaledIdentity(const ir::Value& v, const ir::Value& x, const Geometry& like) {
  const ir::Node* shift = v.producer();
  if (shift == nullptr || !IsStandard(*shift, "Add") || shift->inputs().size() != 2) return std::nullopt;
  const int shift_index = ConstantInput(*shift, 1) != nullptr ? 1 : 0;
  const ir::Value* scaled = shift->input(1 - shift_index);
  const ir::Node* scale = scaled == nullptr ? nullptr : scaled->producer();
  if (scale == nullptr || !IsStandard(*scale, "Mul") || scale->inputs().size() != 2 ||
      SoleConsumer(*scaled) != shift) {
    return std::nullopt;
  }
  const int x_index = scale->input(0) == &x ? 0 : 1;
  if (scale->input(x_index) != &x) return std::nullopt;
  const int64_t rank = Spatial(like) + 2;
  if (!PerChannel(*shift, shift_index, rank, like.cout) || !PerChannel(*scale, 1 - x_index, rank, like.cout)) {
    return std::nullopt;
  }
  return Branch{ir::kNoNode, scale->id(), shift->id()};
}

// Pads of the merged kernel, or nullopt when the branches' outputs do not align.
struct Merged {
  std::vector<int64_t> kernel;
  std::vector<int64_t> pads;
  std::vector<int64_t> offsets[2];  // where each branch's kernel starts in the merged one
};

std::optional<Merged> MergeGeometry(const Geometry& a, const Geometry& b) {
  if (Spatial(a) != Spatial(b) || a.strides != b.strides || a.group != b.group || a.cout != b.cout ||
      a.cin_per_group != b.cin_per_group) {
    return std::nullopt;
  }
  const int64_t n = Spatial(a);
  Merged m;
  m.pads.assign(2 * n, 0);
  m.offsets[0].resize(n);
  m.offsets[1].resize(n);
  m.kernel.resize(n);
  for (int64_t d = 0; d < n; ++d) {
    // Output o of a branch reads x from o*stride - pad_begin over its kernel; the
    // outputs have the same size when pad_begin + pad_end - kernel agree.
    const int64_t extent = a.pads[d] + a.pads[n + d] - a.kernel[d];
    if (b.pads[d] + b.pads[n + d] - b.kernel[d] != extent) return std::nullopt;
    const int64_t begin = std::max(a.pads[d], b.pads[d]);
    m.offsets[0][d] = begin - a.pads[d];
    m.offsets[1][d] = begin - b.pads[d];
    m.kernel[d] = std::max(m.offsets[0][d] + a.kernel[d], m.offsets[1][d] + b.kernel[d]);
    m.pads[d] = begin;
    m.pads[n + d] = m.kernel[d] - begin + extent;
  }
  return m;
}

std::optional<Geometry> BranchGeometry(const ir::Graph& graph, const Branch& b, const Geometry& conv0) {
  if (b.conv != ir::kNoNode) return ConvGeometry(*graph.FindNode(b.conv));
  return IdentityGeometry(conv0);
}

// Adds `w` (dims [cout, cin_pg, k...]) into `merged` (dims [cout, cin_pg, K...]) at `offset`.
void AddKernel(const ir::Tensor& w, const std::vector<int64_t>& offset, ir::Tensor* merged) {
  const int64_t n = w.rank() - 2;
  const std::vector<int64_t>& kd = w.dims();
  const std::vector<int64_t>& md = merged->dims();
  int64_t w_taps = 1, m_taps = 1;
  for (int64_t d = 0; d < n; ++d) {
    w_taps *= kd[2 + d];
    m_taps *= md[2 + d];
  }
  const int64_t filters = kd[0] * kd[1];
  const float* src = w.data<float>();
  float* dst = merged->data<float>();
  for (int64_t t = 0; t < w_taps; ++t) {
    int64_t rest = t, target = 0, stride = 1;
    for (int64_t d = n - 1; d >= 0; --d) {
      target += (rest % kd[2 + d] + offset[d]) * stride;
      rest /= kd[2 + d];
      stride *= md[2 + d];
    }
    for (int64_t f = 0; f < filters; ++f) dst[f * m_taps + target] += src[f * w_taps + t];
  }
}

}  // namespace

std::optional<BranchMatch> MergeBranchesPass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  if (!IsStandard(anchor, "Add") || anchor.inputs().size() != 2 || anchor.outputs().size() != 1) return std::nullopt;
  const ir::Value* in[2] = {anchor.input(0), anchor.input(1)};
  if (in[0] == nullptr || in[1] == nullptr || in[0] == in[1] || in[0]->is_constant() || in[1]->is_constant()) {
    return std::nullopt;
  }
  auto conv_branch = [&](const ir::Value* v) -> const ir::Node* {
    const ir::Node* p = v->producer();
    return p != nullptr && SoleConsumer(*v) == &anchor && ConvGeometry(*p).has_value() ? p : nullptr;
  };
  int first = conv_branch(in[0]) != nullptr ? 0 : 1;
  const ir::Node* conv0 = conv_branch(in[first]);
  if (conv0 == nullptr) return std::nullopt;
  const ir::Value* x = conv0->input(0);
  if (x->type().dtype != ir::DataType::kFloat32) return std::nullopt;
  const Geometry g0 = *ConvGeometry(*conv0);
  const ir::Value* other = in[1 - first];
  Branch b1;
  if (const ir::Node* conv1 = conv_branch(other); conv1 != nullptr && conv1->input(0) == x) {
    b1.conv = conv1->id();
  } else if (other != x) {
    auto scaled = ScaledIdentity(*other, *x, g0);
    if (!scaled.has_value() || SoleConsumer(*other) != &anchor) return std::nullopt;
    b1 = *scaled;
  }
  if (b1.conv == ir::kNoNode) {
    // The identity adds x itself: same channel count and positions.
    if (g0.cout != g0.cin_per_group * g0.group || g0.strides != std::vector<int64_t>(Spatial(g0), 1)) {
      return std::nullopt;
    }
  }
  std::optional<Geometry> g1 = BranchGeometry(graph, b1, g0);
  if (!g1.has_value() || !MergeGeometry(g0, *g1).has_value()) return std::nullopt;
  BranchMatch m{anchor.id(), {Branch{conv0->id(), ir::kNoNode, ir::kNoNode}, b1}};
  return m;
}

absl::Status MergeBranchesPass::Rewrite(ir::Graph* graph, const BranchMatch& match) const {
  ir::Node* conv0 = graph->FindNode(match.branches[0].conv);
  const Branch& b1 = match.branches[1];
  ir::Node* conv1 = graph->FindNode(b1.conv);
  ir::Node* scale_node = graph->FindNode(b1.scale);
  ir::Node* shift_node = graph->FindNode(b1.shift);
  const Geometry g0 = *ConvGeometry(*conv0);
  const Geometry g1 = *BranchGeometry(*graph, b1, g0);
  const Merged m = *MergeGeometry(g0, g1);
  const int64_t cout = g0.cout;

  std::vector<int64_t> dims = {cout, g0.cin_per_group};
  dims.insert(dims.end(), m.kernel.begin(), m.kernel.end());
  ir::Tensor weight(ir::DataType::kFloat32, dims);
  std::vector<float> bias(cout, 0.f);
  auto add_bias = [&](const ir::Node& conv) {
    if (conv.input(2) == nullptr) return;
    const std::vector<float> b = *FloatConstant(conv, 2, cout);
    for (int64_t c = 0; c < cout; ++c) bias[c] += b[c];
  };
  AddKernel(*ConstantInput(*conv0, 1), m.offsets[0], &weight);
  add_bias(*conv0);
  ir::Node* add = graph->FindNode(match.add);
  std::vector<ir::Node*> dead = {add};
  if (conv1 != nullptr) {
    AddKernel(*ConstantInput(*conv1, 1), m.offsets[1], &weight);
    add_bias(*conv1);
    dead.push_back(conv1);
  } else {
    // Identity: output channel c reads input channel c, local index c % cin_per_group.
    std::vector<float> scale(cout, 1.f);
    if (scale_node != nullptr) {
      const int64_t rank = Spatial(g0) + 2;
      const int x_index = scale_node->input(0) == conv0->input(0) ? 0 : 1;
      const int shift_index = ConstantInput(*shift_node, 1) != nullptr ? 1 : 0;
      scale = *PerChannel(*scale_node, 1 - x_index, rank, cout);
      const std::vector<float> shift = *PerChannel(*shift_node, shift_index, rank, cout);
      for (int64_t c = 0; c < cout; ++c) bias[c] += shift[c];
      dead.push_back(shift_node);
      dead.push_back(scale_node);
    }
    int64_t taps = 1, centre = 0;
    for (int64_t d = 0; d < Spatial(g0); ++d) {
      centre = centre * m.kernel[d] + m.offsets[1][d];
      taps *= m.kernel[d];
    }
    float* w = weight.data<float>();
    for (int64_t c = 0; c < cout; ++c) w[(c * g0.cin_per_group + c % g0.cin_per_group) * taps + centre] += scale[c];
  }
  QFUSE_ASSIGN_OR_RETURN(ir::Value * w_value,
                         graph->AddConstant(graph->UniqueValueName(conv0->input(1)->name() + "_merged"),
                                            std::move(weight)));
  QFUSE_ASSIGN_OR_RETURN(ir::Value * b_value,
                         graph->AddConstant(graph->UniqueValueName(conv0->name() + "_merged_bias"),
                                            ir::Tensor::FromVector<float>({cout}, bias)));
  graph->SetInput(conv0, 1, w_value);
  graph->SetInput(conv0, 2, b_value);
  ir::AttributeMap& attrs = conv0->mutable_attrs();
  attrs.Set("pads", m.pads);
  attrs.Erase("auto_pad");
  if (attrs.Has("kernel_shape")) attrs.Set("kernel_shape", m.kernel);
  return ReplaceAndRemove(graph, add->output(0), conv0->output(0), dead);
}

}  // namespace qfuse::fusion
