#include "runtime/int8/unit_requantization.h"

#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/int8/byte_table.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/unary_requantization.h"

namespace qfuse::runtime::int8 {

absl::StatusOr<std::optional<FoldedClamp>> ReadFoldedClamp(const ir::Node& node) {
  if (!node.attrs().Has(kFoldedStageTypeAttr)) return std::optional<FoldedClamp>();
  FoldedClamp f;
  QFUSE_ASSIGN_OR_RETURN(const int64_t type, node.attrs().GetInt(kFoldedStageTypeAttr, 0));
  f.stage.type = static_cast<ir::DataType>(type);
  if (f.stage.type != ir::DataType::kInt8 && f.stage.type != ir::DataType::kUint8) {
    return absl::InvalidArgumentError(absl::StrCat(kFoldedStageTypeAttr, " must be INT8 or UINT8"));
  }
  QFUSE_ASSIGN_OR_RETURN(f.stage.scale, node.attrs().GetFloat(kFoldedStageScaleAttr, 0.f));
  QFUSE_ASSIGN_OR_RETURN(const int64_t zp, node.attrs().GetInt(kFoldedStageZeroPointAttr, 0));
  f.stage.zero_point = static_cast<int32_t>(zp);
  QFUSE_ASSIGN_OR_RETURN(f.min, node.attrs().GetFloat(kFoldedClampMinAttr, std::numeric_limits<float>::lowest()));
  QFUSE_ASSIGN_OR_RETURN(f.max, node.attrs().GetFloat(kFoldedClampMaxAttr, std::numeric_limits<float>::max()));
  if (!(f.stage.scale > 0)) return absl::InvalidArgumentError(absl::StrCat(kFoldedStageScaleAttr, " must be > 0"));
  if (node.output(0) == nullptr || node.output(0)->type().dtype == ir::DataType::kFloat32) {
    return absl::InvalidArgumentError("a node with a folded clamp must have an INT8/UINT8 output");
  }
  return std::optional<FoldedClamp>(f);
}

absl::Status CheckIntegerUnitForm(ir::UnitBaseOp op, const ir::AttributeMap& attrs, int64_t w_rank) {
  switch (op) {
    case ir::UnitBaseOp::kConv:
      if (w_rank < 3) return absl::InvalidArgumentError(absl::StrCat("integer Conv needs weights of rank >= 3, not ", w_rank));
      return absl::OkStatus();
    case ir::UnitBaseOp::kGemm:
    case ir::UnitBaseOp::kMatMul: {
      QFUSE_ASSIGN_OR_RETURN(const int64_t trans_a, attrs.GetInt("transA", 0));
      QFUSE_ASSIGN_OR_RETURN(const float alpha, attrs.GetFloat("alpha", 1.f));
      QFUSE_ASSIGN_OR_RETURN(const float beta, attrs.GetFloat("beta", 1.f));
      if (trans_a != 0 || alpha != 1.f || beta != 1.f || w_rank != 2) {
        return absl::UnimplementedError("integer Gemm/MatMul needs transA 0, alpha 1, beta 1 and 2-D weights");
      }
      return absl::OkStatus();
    }
    case ir::UnitBaseOp::kConvTranspose: break;
  }
  return absl::UnimplementedError(absl::StrCat("integer ", ir::UnitBaseOpName(op), " units are not supported"));
}

absl::StatusOr<UnitRequantization> ReadUnitRequantization(const ir::Node& node) {
  UnitRequantization u;
  QFUSE_ASSIGN_OR_RETURN(u.spec, ir::ReadUnitSpec(node));
  QFUSE_ASSIGN_OR_RETURN(numerics::RequantizeMode mode, ReadRequantizeMode(node));
  u.float_epilogue = !ir::IsClampActivation(u.spec.activation);
  if (u.float_epilogue) mode = numerics::RequantizeMode::kOnnx;  // the epilogue is float in both modes
  QFUSE_ASSIGN_OR_RETURN(u.x, ReadActivationQuant(node.input(ir::kUnitX), "x"));
  if (node.input(ir::kUnitResidual) != nullptr) {
    QFUSE_ASSIGN_OR_RETURN(u.residual, ReadActivationQuant(node.input(ir::kUnitResidual), "residual"));
  }
  const ir::Value* wv = node.input(ir::kUnitW);
  if (wv == nullptr || !wv->is_constant() || wv->initializer()->dtype() != ir::DataType::kInt8 ||
      !wv->type().quant.has_value()) {
    return absl::InvalidArgumentError("w must be a constant INT8 tensor with quantization parameters");
  }
  const ir::Tensor& w = *wv->initializer();
  const ir::QuantParams& wq = *wv->type().quant;
  QFUSE_ASSIGN_OR_RETURN(u.channel_axis, ir::WeightOutputChannelAxis(u.spec.base_op, node.attrs()));
  if (u.channel_axis < 0 || w.rank() <= u.channel_axis) {
    return absl::InvalidArgumentError(absl::StrCat("w ", ir::DimsToString(w.dims()), " has no output-channel axis"));
  }
  u.out_channels = w.dims()[u.channel_axis];
  const bool per_channel = wq.scales.size() > 1;
  if ((per_channel && (static_cast<int64_t>(wq.scales.size()) != u.out_channels ||
                       wq.axis.value_or(-1) != u.channel_axis)) ||
      wq.zero_points.size() != wq.scales.size()) {
    return absl::InvalidArgumentError(absl::StrCat("weight quantization must be per tensor or per output channel (axis ",
                                                   u.channel_axis, ", ", u.out_channels, " scales)"));
  }
  if (const ir::Value* b = node.input(ir::kUnitBias); b != nullptr) {
    if (!b->is_constant() || b->initializer()->dtype() != ir::DataType::kInt32 ||
        b->initializer()->num_elements() != u.out_channels) {
      return absl::InvalidArgumentError(absl::StrCat("bias must be a constant INT32 [", u.out_channels, "]"));
    }
    u.bias.assign(b->initializer()->values<int32_t>().begin(), b->initializer()->values<int32_t>().end());
  }
  OutputStageSpec stage;
  stage.mode = mode;
  const ir::TensorType& yt = node.output(0)->type();
  stage.output_type = yt.dtype;
  if (yt.dtype != ir::DataType::kFloat32) {
    QFUSE_ASSIGN_OR_RETURN(ActivationQuant y, ReadActivationQuant(node.output(0), "y"));
    stage.output_scale = y.scale;
    stage.output_zero_point = y.zero_point;
  }
  std::optional<FoldedClamp> folded;
  QFUSE_ASSIGN_OR_RETURN(folded, ReadFoldedClamp(node));
  if (folded.has_value() && u.float_epilogue) {
    return absl::InvalidArgumentError("a folded clamp needs a clamp activation in the unit");
  }
  if (folded.has_value()) {
    stage.output_type = folded->stage.type;
    stage.output_scale = folded->stage.scale;
    stage.output_zero_point = folded->stage.zero_point;
  }
  QFUSE_ASSIGN_OR_RETURN(const int64_t matmul_to_float, node.attrs().GetInt(kMatMulToFloatAttr, 0));
  if (matmul_to_float != 0) {
    if (folded.has_value()) return absl::InvalidArgumentError("a folded clamp needs the integer output stage");
    u.matmul_to_float = true;
    for (int64_t c = 0; c < u.out_channels; ++c) {
      u.dequant_scales.push_back(u.x.scale * wq.scales[wq.scales.size() == 1 ? 0 : c]);
    }
    if (!u.bias.empty()) {
      QFUSE_ASSIGN_OR_RETURN(const std::vector<float> bias_scales, node.attrs().GetFloats(kBiasScalesAttr, {}));
      if (bias_scales.size() != 1 && static_cast<int64_t>(bias_scales.size()) != u.out_channels) {
        return absl::InvalidArgumentError(absl::StrCat(kBiasScalesAttr, " needs 1 or ", u.out_channels, " scales"));
      }
      for (int64_t c = 0; c < u.out_channels; ++c) {
        u.float_bias.push_back(static_cast<float>(u.bias[c]) * bias_scales[bias_scales.size() == 1 ? 0 : c]);
      }
    }
  }
  QFUSE_ASSIGN_OR_RETURN(const int64_t dequantized_epilogue, node.attrs().GetInt(kDequantizedEpilogueAttr, 0));
  stage.dequantize_then_quantize = dequantized_epilogue != 0;
  stage.a.input_scale = stage.dequantize_then_quantize ? 1.f : u.x.scale;  // w's scales are s_x * s_w[c] then
  stage.a.weight_scales = wq.scales;
  if (u.residual.has_value()) {
    stage.has_b = true;
    stage.b.input_scale = u.residual->scale;
  }
  const ir::ClampRange bounds = u.spec.ClampBounds();  // unbounded for non-linear activations
  stage.act_min = bounds.lo;
  stage.act_max = bounds.hi;
  QFUSE_ASSIGN_OR_RETURN(u.stage, OutputStage::Create(stage));
  if (folded.has_value()) {
    QFUSE_ASSIGN_OR_RETURN(const ActivationQuant y, ReadActivationQuant(node.output(0), "y"));
    QFUSE_ASSIGN_OR_RETURN(const ByteTable table, ClampTable(mode, folded->stage, y, folded->min, folded->max));
    u.stage.SetByteMap(table, y.type, folded->stage.scale / y.scale);
  }
  return u;
}

}  // namespace qfuse::runtime::int8
