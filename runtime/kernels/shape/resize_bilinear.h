// Bilinear Resize of float32 [H, W] planes as onnxruntime 1.30 computes it on the CPU (its
// UpsampleBilinear: Resize and Upsample in mode linear on a 2-D input, or on a 4-D one whose
// two outer scales are 1), so that a Resize after DequantizeLinear gives the same floats.
// Per axis, all in float32 (models/zoo/resize_probe.py checks it against onnxruntime):
//   scale = float(out) / float(in) when sizes are given, else the given scale as a float;
//   c = float(j) when scale == 1, else the coordinate transform of float(j):
//     half_pixel          (j + 0.5f) / scale - 0.5f
//     pytorch_half_pixel  the same, or 0 when out == 1
//     align_corners       j * float(in - 1) / float(out - 1), or 0 when out == 1
//     asymmetric          j / scale
//     tf_half_pixel_for_nn (j + 0.5f) / scale
//   c clamped to [0, in - 1]; lower = int(c), upper = min(lower + 1, in - 1);
//   upper_weight = |c - lower|, lower_weight = |c - upper|, both 0.5 where lower == upper.
// Each output, every product and sum rounded to float in this order (no fused multiply-add):
//   y = (wx_lo * wy_lo) * X[y_lo][x_lo] + (wx_up * wy_lo) * X[y_lo][x_up]
//     + (wx_lo * wy_up) * X[y_up][x_lo] + (wx_up * wy_up) * X[y_up][x_up].
// tf_crop_and_resize (extrapolation) is not covered here.
#ifndef QFUSE_RUNTIME_KERNELS_SHAPE_RESIZE_BILINEAR_H_
#define QFUSE_RUNTIME_KERNELS_SHAPE_RESIZE_BILINEAR_H_

#include <cstdint>
#include <vector>

#include "runtime/kernels/shape/resize_taps.h"

namespace qfuse::runtime::kernels {

// The two taps of each output index along one axis.
struct BilinearAxis {
  std::vector<int64_t> lower, upper;
  std::vector<float> lower_weight, upper_weight;
};

// True for the coordinate modes ComputeBilinearAxis implements (all but tf_crop_and_resize).
bool BilinearSupports(CoordinateMode mode);

// Taps of an axis of `in_dim` (>= 1) resized to `out_dim` with float32 scale `scale`.
BilinearAxis ComputeBilinearAxis(CoordinateMode mode, int64_t in_dim, int64_t out_dim, float scale);

// Output row `row` (an index into `ys`) of one plane: out[j] for j < xs.lower.size(), from the
// plane `in` of rows of `in_width` floats.
void BilinearRow(const float* in, int64_t in_width, const BilinearAxis& ys, int64_t row, const BilinearAxis& xs,
                 float* out);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_SHAPE_RESIZE_BILINEAR_H_
