#include "numerics/requantize.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace qfuse::numerics {

void OnnxMultipliers(float input_scale, absl::Span<const float> weight_scales, float output_scale,
                     absl::Span<float> out) {
  for (size_t c = 0; c < weight_scales.size(); ++c) out[c] = OnnxMultiplier(input_scale, weight_scales[c], output_scale);
}

absl::StatusOr<FixedMultiplier> QuantizeMultiplier(double real) {
  if (!std::isfinite(real) || real < std::ldexp(1.0, -32) || real >= std::ldexp(1.0, 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("multiplier ", real, " is outside [2^-32, 2^30), the range a Q31 multiplier and shift encode"));
  }
  int shift = 0;
  const double q = std::frexp(real, &shift);  // q in [0.5, 1)
  int64_t fixed = static_cast<int64_t>(std::round(q * static_cast<double>(int64_t{1} << 31)));  // half away from 0
  if (fixed == (int64_t{1} << 31)) {
    fixed /= 2;
    ++shift;
  }
  if (shift > 30 || shift < -31) {
    return absl::InvalidArgumentError(absl::StrCat("multiplier ", real, " needs shift ", shift, " outside [-31, 30]"));
  }
  return FixedMultiplier{static_cast<int32_t>(fixed), shift};
}

absl::Status QuantizeMultipliers(absl::Span<const double> reals, absl::Span<FixedMultiplier> out) {
  for (size_t c = 0; c < reals.size(); ++c) {
    absl::StatusOr<FixedMultiplier> m = QuantizeMultiplier(reals[c]);
    if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat("channel ", c, ": ", m.status().message()));
    out[c] = *m;
  }
  return absl::OkStatus();
}

int64_t AccumulatorMagnitudeBound(const AccumulatorBound& b) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t product;
  if (__builtin_mul_overflow(b.num_products, b.max_abs_input, &product) ||
      __builtin_mul_overflow(product, b.max_abs_weight, &product)) {
    return kMax;
  }
  int64_t total;
  if (__builtin_add_overflow(product, b.max_abs_bias, &total)) return kMax;
  return total;
}

absl::Status CheckAccumulatorFitsInt32(const AccumulatorBound& b, const std::string& what) {
  const int64_t bound = AccumulatorMagnitudeBound(b);
  if (bound <= std::numeric_limits<int32_t>::max()) return absl::OkStatus();
  return absl::OutOfRangeError(absl::StrCat(
      what, ": the int32 accumulator could overflow: K (", b.num_products, ") * max|x - zp_x| (", b.max_abs_input,
      ") * max|w - zp_w| (", b.max_abs_weight, ") + max|bias| (", b.max_abs_bias, ") = ", bound, " > 2^31 - 1"));
}

}  // namespace qfuse::numerics
