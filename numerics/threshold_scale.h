// The scale rule of calibrated activations: a saturation threshold T maps to the zero-point-0
// scale T / qmax (int8 symmetric: qmax 127; uint8 on a non-negative tensor: 255), and back.
#ifndef QFUSE_NUMERICS_THRESHOLD_SCALE_H_
#define QFUSE_NUMERICS_THRESHOLD_SCALE_H_

#include <cmath>
#include <cstdint>

namespace qfuse::numerics {

inline constexpr int32_t kInt8SymmetricMax = 127;  // int8 levels -127..127 around zero point 0
inline constexpr int32_t kUint8Max = 255;          // uint8 levels 0..255 from zero point 0

// T / qmax in one float32 division (rounded to nearest even: the bits a calibration table and
// TensorRT's cache store). A threshold that is not > 0 (an all-zero tensor, NaN) gives scale 1:
// every value then quantizes to exactly 0.
inline float ScaleOfThreshold(float threshold, int32_t qmax) {
  return threshold > 0 ? threshold / static_cast<float>(qmax) : 1.f;
}

// The threshold a scale stands for: scale * qmax in one float32 product (a TensorRT cache stores
// only the scale).
inline float ThresholdOfScale(float scale, int32_t qmax) { return scale * static_cast<float>(qmax); }

// A scale at or just above `scale` (or below it by float rounding only: float(1/255) itself has
// the reciprocal 254.99998) whose float32 reciprocal floors to M = floor(1 / scale + 2^-20 M):
// float(1.0 / M), or the float up to 3 ulps below it (float(1/3) = 0.33333334, whose reciprocal
// 2.9999998 floors to 2). onnxruntime runs DequantizeLinear -> Softmax -> QuantizeLinear as its
// QLinearSoftmax, which multiplies by floor(1 / y_scale); on this scale that factor is the
// scale's own reciprocal up to float rounding. The range grows by one part in M at most. A
// scale not in [2^-23, 1) comes back unchanged (below it, 1 / scale is a whole float32 already).
inline float ScaleWithWholeReciprocal(float scale) {
  if (!(scale >= 0x1p-23f && scale < 1.f)) return scale;
  for (double m = std::floor(1.0 / static_cast<double>(scale) * (1.0 + 0x1p-20)); m >= 1.0; m -= 1.0) {
    float candidate = static_cast<float>(1.0 / m);
    for (int ulps = 0; ulps <= 3; ++ulps, candidate = std::nextafter(candidate, 0.f)) {
      if (std::floor(1.0f / candidate) == static_cast<float>(m)) return candidate;
    }
  }
  return 1.f;
}

}  // namespace qfuse::numerics

#endif  // QFUSE_NUMERICS_THRESHOLD_SCALE_H_
