#include "runtime/kernels/shape/resize_bilinear.h"

#include <algorithm>
#include <cmath>

namespace qfuse::runtime::kernels {
namespace {

float SourceCoordinate(CoordinateMode mode, float j, float in_dim, float out_dim, float scale) {
  switch (mode) {
    case CoordinateMode::kHalfPixel: return (j + 0.5f) / scale - 0.5f;
    case CoordinateMode::kPytorchHalfPixel: return out_dim > 1 ? (j + 0.5f) / scale - 0.5f : 0.f;
    case CoordinateMode::kAlignCorners: return out_dim == 1 ? 0.f : j * (in_dim - 1) / (out_dim - 1);
    case CoordinateMode::kAsymmetric: return j / scale;
    case CoordinateMode::kTfHalfPixelForNn: return (j + 0.5f) / scale;
    case CoordinateMode::kTfCropAndResize: break;
  }
  return 0.f;
}

}  // namespace

bool BilinearSupports(CoordinateMode mode) { return mode != CoordinateMode::kTfCropAndResize; }

BilinearAxis ComputeBilinearAxis(CoordinateMode mode, int64_t in_dim, int64_t out_dim, float scale) {
  BilinearAxis a;
  a.lower.resize(out_dim);
  a.upper.resize(out_dim);
  a.lower_weight.resize(out_dim);
  a.upper_weight.resize(out_dim);
  const float last = static_cast<float>(in_dim - 1);
  for (int64_t j = 0; j < out_dim; ++j) {
    const float jf = static_cast<float>(j);
    float c = scale == 1.f ? jf
                           : SourceCoordinate(mode, jf, static_cast<float>(in_dim), static_cast<float>(out_dim), scale);
    c = std::max(0.f, std::min(c, last));
    const int64_t lower = std::min(static_cast<int64_t>(c), in_dim - 1);
    const int64_t upper = std::min(lower + 1, in_dim - 1);
    a.lower[j] = lower;
    a.upper[j] = upper;
    if (lower == upper) {
      a.lower_weight[j] = 0.5f;
      a.upper_weight[j] = 0.5f;
    } else {
      a.upper_weight[j] = std::fabs(c - static_cast<float>(lower));
      a.lower_weight[j] = std::fabs(c - static_cast<float>(upper));
    }
  }
  return a;
}

void BilinearRow(const float* in, int64_t in_width, const BilinearAxis& ys, int64_t row, const BilinearAxis& xs,
                 float* out) {
  const float* lo = in + ys.lower[row] * in_width;
  const float* up = in + ys.upper[row] * in_width;
  const float wy_lo = ys.lower_weight[row];
  const float wy_up = ys.upper_weight[row];
  const int64_t n = static_cast<int64_t>(xs.lower.size());
  for (int64_t j = 0; j < n; ++j) {
    const int64_t x_lo = xs.lower[j];
    const int64_t x_up = xs.upper[j];
    const float wx_lo = xs.lower_weight[j];
    const float wx_up = xs.upper_weight[j];
    out[j] = (wx_lo * wy_lo) * lo[x_lo] + (wx_up * wy_lo) * lo[x_up] + (wx_lo * wy_up) * up[x_lo] +
             (wx_up * wy_up) * up[x_up];
  }
}

}  // namespace qfuse::runtime::kernels
