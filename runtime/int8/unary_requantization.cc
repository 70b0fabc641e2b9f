#include "runtime/int8/unary_requantization.h"

#include "base/status_macros.h"

namespace qfuse::runtime::int8 {

absl::StatusOr<OutputStage> SingleTermStage(numerics::RequantizeMode mode, const ActivationQuant& in,
                                            const ActivationQuant& out, float weight, float act_min,
                                            float act_max) {
  OutputStageSpec spec;
  spec.mode = mode;
  spec.output_type = out.type;
  spec.output_scale = out.scale;
  spec.output_zero_point = out.zero_point;
  spec.a.input_scale = in.scale;
  spec.a.weight_scales = {weight};
  spec.act_min = act_min;
  spec.act_max = act_max;
  return OutputStage::Create(spec);
}

absl::StatusOr<ByteTable> ClampTable(numerics::RequantizeMode mode, const ActivationQuant& x,
                                     const ActivationQuant& y, float lo, float hi) {
  if (mode == numerics::RequantizeMode::kOnnx) {
    return DequantizedTable(x, y, [lo, hi](float f) {
      f = f < lo ? lo : f;
      return f > hi ? hi : f;
    });
  }
  QFUSE_ASSIGN_OR_RETURN(const OutputStage stage, SingleTermStage(mode, x, y, 1.f, lo, hi));
  ByteTable table{};
  for (int raw = 0; raw < 256; ++raw) {
    const int32_t q = x.type == ir::DataType::kInt8 ? static_cast<int8_t>(raw) : raw;
    table[raw] = static_cast<uint8_t>(stage.Quantize(q - x.zero_point, 0));
  }
  return table;
}

ByteTable ActivationTable(const ActivationQuant& x, const ActivationQuant& y, const ir::UnitSpec& activation) {
  return DequantizedTable(x, y, [&activation](float v) { return ir::ApplyUnitActivation(activation, v); });
}

}  // namespace qfuse::runtime::int8
