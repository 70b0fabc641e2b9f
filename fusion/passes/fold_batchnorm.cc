#include "fusion/passes/fold_batchnorm.h"

#include <cmath>
#include <vector>

#include "fusion/rewrite_util.h"
#include "ir/fused_unit.h"

namespace qfuse::fusion {
namespace {

// Per-channel scale s and shift t with BN(x) = s * x + t.
struct ScaleShift {
  std::vector<float> scale;
  std::vector<float> shift;
};

std::optional<ScaleShift> ReadBatchNorm(const ir::Node& bn) {
  if (bn.op_type() != "BatchNormalization" || !bn.domain().empty() || bn.outputs().size() != 1) return std::nullopt;
  absl::StatusOr<int64_t> training = bn.attrs().GetInt("training_mode", 0);
  absl::StatusOr<float> epsilon = bn.attrs().GetFloat("epsilon", 1e-5f);
  if (!training.ok() || *training != 0 || !epsilon.ok()) return std::nullopt;
  const ir::Tensor* gamma = ConstantInput(bn, 1);
  if (gamma == nullptr) return std::nullopt;
  const int64_t c = gamma->num_elements();
  auto g = FloatConstant(bn, 1, c);
  auto beta = FloatConstant(bn, 2, c);
  auto mean = FloatConstant(bn, 3, c);
  auto var = FloatConstant(bn, 4, c);
  if (!g || !beta || !mean || !var) return std::nullopt;
  ScaleShift ss{std::vector<float>(c), std::vector<float>(c)};
  for (int64_t i = 0; i < c; ++i) {
    // Computed in double so folding adds no error beyond the final float rounding.
    const double s = static_cast<double>((*g)[i]) / std::sqrt(static_cast<double>((*var)[i]) + *epsilon);
    ss.scale[i] = static_cast<float>(s);
    ss.shift[i] = static_cast<float>((*beta)[i] - s * (*mean)[i]);
  }
  return ss;
}

int64_t Channels(const ir::Node& bn) { return ConstantInput(bn, 1)->num_elements(); }

bool OutputRankIs(const ir::Value& v, int64_t rank) {
  return v.type().shape.rank_known && v.type().shape.rank() == rank;
}

// Number of output channels `producer` writes along axis 1, or -1 if it cannot be folded.
int64_t FoldableChannels(const ir::Node& producer) {
  const ir::Tensor* w = ConstantInput(producer, 1);
  const std::optional<ir::UnitBaseOp> op = ir::UnitBaseOpOf(producer);
  if (w == nullptr || w->dtype() != ir::DataType::kFloat32 || !op.has_value()) return -1;
  if (op == ir::UnitBaseOp::kConv) {
    if (producer.input(2) != nullptr && ConstantInput(producer, 2) == nullptr) return -1;
    return w->rank() >= 3 ? w->dims()[0] : -1;
  }
  if (op == ir::UnitBaseOp::kConvTranspose) {
    if (producer.input(2) != nullptr && ConstantInput(producer, 2) == nullptr) return -1;
    absl::StatusOr<int64_t> group = producer.attrs().GetInt("group", 1);
    return w->rank() >= 3 && group.ok() ? w->dims()[1] * *group : -1;
  }
  if (op == ir::UnitBaseOp::kGemm || op == ir::UnitBaseOp::kMatMul) {
    if (w->rank() != 2 || !OutputRankIs(*producer.output(0), 2)) return -1;
    absl::StatusOr<int64_t> axis = ir::WeightOutputChannelAxis(*op, producer.attrs());
    if (!axis.ok()) return -1;
    const int64_t n = w->dims()[*axis];
    if (op == ir::UnitBaseOp::kMatMul) return n;
    const ir::Tensor* c = ConstantInput(producer, 2);
    if (producer.input(2) != nullptr && (c == nullptr || (c->num_elements() != 1 && c->num_elements() != n) ||
                                         (c->rank() > 0 && c->dims().back() != c->num_elements()))) {
      return -1;  // only scalar or per-column C folds
    }
    return n;
  }
  return -1;
}

}  // namespace

std::optional<BatchNormMatch> FoldBatchNormPass::Match(const ir::Graph& graph, const ir::Node& anchor) const {
  if (!ReadBatchNorm(anchor).has_value()) return std::nullopt;
  const ir::Node* producer = anchor.input(0)->producer();
  if (producer == nullptr || SoleConsumer(*anchor.input(0)) != &anchor) return std::nullopt;
  const ir::Node* bias_add = nullptr;
  if (producer->op_type() == "Add" && producer->domain().empty()) {
    // Linear layer: MatMul(x, W) + b with b per output column.
    bias_add = producer;
    const int bias_index = ConstantInput(*bias_add, 1) != nullptr ? 1 : 0;
    const ir::Value* mm_out = bias_add->input(1 - bias_index);
    producer = mm_out == nullptr ? nullptr : mm_out->producer();
    if (producer == nullptr || ir::UnitBaseOpOf(*producer) != ir::UnitBaseOp::kMatMul ||
        SoleConsumer(*mm_out) != bias_add) {
      return std::nullopt;
    }
    const ir::Tensor* b = ConstantInput(*bias_add, bias_index);
    if (b == nullptr || b->dtype() != ir::DataType::kFloat32 || b->num_elements() != Channels(anchor) ||
        (b->rank() > 0 && b->dims().back() != b->num_elements())) {
      return std::nullopt;
    }
  }
  if (FoldableChannels(*producer) != Channels(anchor)) return std::nullopt;
  return BatchNormMatch{producer->id(), bias_add == nullptr ? ir::kNoNode : bias_add->id(), anchor.id()};
}

absl::Status FoldBatchNormPass::Rewrite(ir::Graph* graph, const BatchNormMatch& match) const {
  ir::Node* batch_norm = graph->FindNode(match.batch_norm);
  ir::Node* bias_add = graph->FindNode(match.bias_add);
  const ScaleShift ss = *ReadBatchNorm(*batch_norm);
  const int64_t channels = static_cast<int64_t>(ss.scale.size());
  ir::Node* p = graph->FindNode(match.producer);
  const ir::UnitBaseOp op = *ir::UnitBaseOpOf(*p);
  ir::Tensor w = *ConstantInput(*p, 1);
  float* wd = w.data<float>();
  // Scale the weights of output channel `oc`.
  if (op == ir::UnitBaseOp::kConv) {
    const int64_t per_channel = w.num_elements() / channels;
    for (int64_t oc = 0; oc < channels; ++oc) {
      for (int64_t i = 0; i < per_channel; ++i) wd[oc * per_channel + i] *= ss.scale[oc];
    }
  } else if (op == ir::UnitBaseOp::kConvTranspose) {
    // Weight layout [Cin, Cout/group, k...]; input channel ci feeds outputs of its group.
    const int64_t cin = w.dims()[0];
    const int64_t cout_per_group = w.dims()[1];
    const int64_t group = channels / cout_per_group;
    const int64_t kernel = w.num_elements() / (cin * cout_per_group);
    for (int64_t ci = 0; ci < cin; ++ci) {
      const int64_t g = ci / (cin / group);
      for (int64_t j = 0; j < cout_per_group; ++j) {
        const float s = ss.scale[g * cout_per_group + j];
        float* row = wd + (ci * cout_per_group + j) * kernel;
        for (int64_t k = 0; k < kernel; ++k) row[k] *= s;
      }
    }
  } else {
    const bool by_rows = *ir::WeightOutputChannelAxis(op, p->attrs()) == 0;  // Gemm's [N, K]
    const int64_t rows = w.dims()[0];
    const int64_t cols = w.dims()[1];
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) wd[r * cols + c] *= ss.scale[by_rows ? r : c];
    }
  }
  // New bias: s * old_bias + t (old bias of each kind brought to per-channel form).
  std::vector<float> bias(ss.shift);
  ir::Node* bias_owner = p;
  int bias_index = 2;
  if (op == ir::UnitBaseOp::kMatMul) {
    bias_owner = bias_add;
    bias_index = bias_add != nullptr && ConstantInput(*bias_add, 1) != nullptr ? 1 : 0;
  }
  const ir::Tensor* old_bias = bias_owner != nullptr ? ConstantInput(*bias_owner, bias_index) : nullptr;
  float old_scale = 1.f;  // Gemm: Y = alpha*A*B + beta*C
  if (op == ir::UnitBaseOp::kGemm) {
    old_scale = *p->attrs().GetFloat("beta", 1.f);
    if (old_scale == 0.f) old_bias = nullptr;
    p->mutable_attrs().Set("beta", 1.0f);
  }
  if (old_bias != nullptr) {
    for (int64_t c = 0; c < channels; ++c) {
      const float b = old_bias->data<float>()[old_bias->num_elements() == 1 ? 0 : c];
      bias[c] += ss.scale[c] * old_scale * b;
    }
  }
  QFUSE_ASSIGN_OR_RETURN(ir::Value * new_w,
                         graph->AddConstant(graph->UniqueValueName(p->input(1)->name() + "_bnfold"), std::move(w)));
  graph->SetInput(p, 1, new_w);
  QFUSE_ASSIGN_OR_RETURN(
      ir::Value * new_b,
      graph->AddConstant(graph->UniqueValueName(batch_norm->name() + "_bias"),
                         ir::Tensor::FromVector<float>({channels}, bias)));
  ir::Value* folded_out;
  if (op == ir::UnitBaseOp::kMatMul) {
    if (bias_add != nullptr) {
      graph->SetInput(bias_add, bias_index, new_b);
      folded_out = bias_add->output(0);
    } else {
      QFUSE_ASSIGN_OR_RETURN(ir::Node * add,
                             graph->AddNode("Add", p->name() + "_bn_bias", {p->output(0), new_b},
                                            {graph->UniqueValueName(p->output(0)->name() + "_biased")}));
      folded_out = add->output(0);
    }
  } else {
    graph->SetInput(p, 2, new_b);
    folded_out = p->output(0);
  }
  return ReplaceAndRemove(graph, batch_norm->output(0), folded_out, {batch_norm});
}

std::optional<StandaloneBatchNormMatch> BatchNormToScaleShiftPass::Match(const ir::Graph& graph,
                                                                         const ir::Node& anchor) const {
  if (!ReadBatchNorm(anchor).has_value()) return std::nullopt;
  const ir::Shape& shape = anchor.input(0)->type().shape;
  if (!shape.rank_known || shape.rank() < 2) return std::nullopt;
  return StandaloneBatchNormMatch{anchor.id()};
}

absl::Status BatchNormToScaleShiftPass::Rewrite(ir::Graph* graph, const StandaloneBatchNormMatch& match) const {
  ir::Node* bn = graph->FindNode(match.batch_norm);
  const ScaleShift ss = *ReadBatchNorm(*bn);
  const int64_t rank = bn->input(0)->type().shape.rank();
  std::vector<int64_t> dims(rank - 1, 1);  // [C, 1, ..., 1] broadcasts along axis 1
  dims[0] = static_cast<int64_t>(ss.scale.size());
  QFUSE_ASSIGN_OR_RETURN(ir::Value * scale, graph->AddConstant(graph->UniqueValueName(bn->name() + "_scale"),
                                                               ir::Tensor::FromVector<float>(dims, ss.scale)));
  QFUSE_ASSIGN_OR_RETURN(ir::Value * shift, graph->AddConstant(graph->UniqueValueName(bn->name() + "_shift"),
                                                               ir::Tensor::FromVector<float>(dims, ss.shift)));
  const std::string out = bn->output(0)->name();
  QFUSE_ASSIGN_OR_RETURN(ir::Node * mul, graph->AddNode("Mul", bn->name() + "_mul", {bn->input(0), scale},
                                                        {graph->UniqueValueName(out + "_scaled")}));
  mul->output(0)->mutable_type() = bn->output(0)->type();
  QFUSE_ASSIGN_OR_RETURN(ir::Node * add, graph->AddNode("Add", bn->name() + "_add", {mul->output(0), shift},
                                                        {graph->UniqueValueName(out + "_shifted")}));
  return ReplaceAndRemove(graph, bn->output(0), add->output(0), {bn});
}

}  // namespace qfuse::fusion
