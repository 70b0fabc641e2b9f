// The scale rule of calibrated activations: a saturation threshold T maps to the zero-point-0
// scale T / qmax (int8 symmetric: qmax 127; uint8 on a non-negative tensor: 255), and back.
#ifndef QFUSE_NUMERICS_THRESHOLD_SCALE_H_
#define QFUSE_NUMERICS_THRESHOLD_SCALE_H_

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

}  // namespace qfuse::numerics

#endif  // QFUSE_NUMERICS_THRESHOLD_SCALE_H_
