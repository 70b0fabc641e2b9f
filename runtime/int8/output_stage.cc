#include "runtime/int8/output_stage.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace qfuse::runtime::int8 {
namespace {

template <typename T>
void Bounds(const OutputStageSpec& spec, int32_t* lo, int32_t* hi) {
  const int32_t zp = spec.output_zero_point;
  *lo = numerics::QuantizeLinear<T>(spec.act_min, spec.output_scale, zp);
  *hi = numerics::QuantizeLinear<T>(spec.act_max, spec.output_scale, zp);
}

}  // namespace

absl::StatusOr<OutputStage> OutputStage::Create(const OutputStageSpec& spec) {
  OutputStage s;
  s.mode_ = spec.mode;
  s.output_type_ = spec.output_type;
  s.has_b_ = spec.has_b;
  s.act_min_ = spec.act_min;
  s.act_max_ = spec.act_max;
  if (spec.a.weight_scales.empty() || (spec.has_b && spec.b.weight_scales.size() != 1)) {
    return absl::InvalidArgumentError("output stage: a term needs one or more scales, b exactly one");
  }
  for (float w : spec.a.weight_scales) s.dequant_a_.push_back(spec.a.input_scale * w);
  s.dequant_b_ = spec.b.input_scale;
  if (spec.output_type == ir::DataType::kFloat32) {
    s.onnx_a_.assign(spec.a.weight_scales.size(), 0.f);
    return s;
  }
  switch (spec.output_type) {
    case ir::DataType::kInt8: Bounds<int8_t>(spec, &s.lo_, &s.hi_); break;
    case ir::DataType::kUint8: Bounds<uint8_t>(spec, &s.lo_, &s.hi_); break;
    default:
      return absl::UnimplementedError(
          absl::StrCat("output type ", ir::DataTypeName(spec.output_type), "; expected INT8, UINT8 or FLOAT"));
  }
  if (s.lo_ > s.hi_) {
    return absl::InvalidArgumentError(absl::StrCat("activation bounds [", spec.act_min, ", ", spec.act_max, "] are empty"));
  }
  if (!(spec.output_scale > 0) || !std::isfinite(spec.output_scale)) {
    return absl::InvalidArgumentError(absl::StrCat("output scale ", spec.output_scale, " is not positive and finite"));
  }
  s.zp_ = spec.output_zero_point;
  s.flo_ = static_cast<float>(s.lo_ - s.zp_);
  s.fhi_ = static_cast<float>(s.hi_ - s.zp_);
  const double extra = spec.has_b ? std::ldexp(1.0, kTwoTermFractionBits) : 1.0;
  for (size_t c = 0; c < spec.a.weight_scales.size(); ++c) {
    const float w = spec.a.weight_scales[c];
    s.onnx_a_.push_back(numerics::OnnxMultiplier(spec.a.input_scale, w, spec.output_scale));
    if (spec.mode == numerics::RequantizeMode::kFixed) {
      const double real = static_cast<double>(spec.a.input_scale) * w / spec.output_scale * extra;
      absl::StatusOr<numerics::FixedMultiplier> m = numerics::QuantizeMultiplier(real);
      if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat("channel ", c, ": ", m.status().message()));
      s.fixed_a_.push_back(*m);
    }
  }
  if (spec.has_b) {
    s.onnx_b_ = spec.b.input_scale / spec.output_scale;
    if (spec.mode == numerics::RequantizeMode::kFixed) {
      absl::StatusOr<numerics::FixedMultiplier> m =
          numerics::QuantizeMultiplier(static_cast<double>(spec.b.input_scale) / spec.output_scale * extra);
      if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat("second input: ", m.status().message()));
      s.fixed_b_ = *m;
    }
  }
  return s;
}

}  // namespace qfuse::runtime::int8
