// Resize-13 sampling along one axis: maps each output coordinate to input taps
// (indices and weights) for nearest, linear and cubic modes, following the ONNX
// reference implementation (onnx/backend/test/case/node/resize.py): coordinates in
// double; an integral source coordinate x is treated as x - 1 with ratio 1; taps past
// the edge are clamped to it (edge padding) unless exclude_outside zeroes them and
// renormalises the rest.
#ifndef QFUSE_RUNTIME_KERNELS_SHAPE_RESIZE_TAPS_H_
#define QFUSE_RUNTIME_KERNELS_SHAPE_RESIZE_TAPS_H_

#include <cstdint>
#include <vector>

namespace qfuse::runtime::kernels {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordinateMode { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn, kTfCropAndResize };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeParams {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateMode coordinate_mode = CoordinateMode::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  float extrapolation_value = 0.f;
};

// Taps of one axis: output j reads index[j * taps + t] with weight[j * taps + t];
// extrapolate[j] (tf_crop_and_resize only) means "outside the input: write the
// extrapolation value".
struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
  std::vector<uint8_t> extrapolate;
  bool any_extrapolate = false;
  bool identity = false;  // out == in and every output copies its own index
};

// `scale` is the axis scale (given, or out/in when sizes were given); roi_start and
// roi_end are the normalised crop box for tf_crop_and_resize (else ignored).
AxisTaps ComputeAxisTaps(const ResizeParams& p, int64_t in_dim, int64_t out_dim, double scale, double roi_start,
                         double roi_end);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_SHAPE_RESIZE_TAPS_H_
