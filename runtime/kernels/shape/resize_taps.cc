#include "runtime/kernels/shape/resize_taps.h"

#include <algorithm>
#include <cmath>

namespace qfuse::runtime::kernels {
namespace {

// Source coordinate of output coordinate x; `out_width` is scale * in_dim (not the
// rounded output size), as in the reference.
double SourceCoordinate(const ResizeParams& p, int64_t x, int64_t in_dim, double out_width, double scale,
                        double roi_start, double roi_end) {
  const double xd = static_cast<double>(x);
  const double in_width = static_cast<double>(in_dim);
  switch (p.coordinate_mode) {
    case CoordinateMode::kHalfPixel: return (xd + 0.5) / scale - 0.5;
    case CoordinateMode::kPytorchHalfPixel: return out_width == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
    case CoordinateMode::kAlignCorners: return out_width == 1 ? 0.0 : xd * (in_width - 1) / (out_width - 1);
    case CoordinateMode::kAsymmetric: return xd / scale;
    case CoordinateMode::kTfHalfPixelForNn: return (xd + 0.5) / scale;
    case CoordinateMode::kTfCropAndResize: {
      const double x_ori = out_width == 1 ? (roi_end - roi_start) * (in_width - 1) / 2
                                          : xd * (roi_end - roi_start) * (in_width - 1) / (out_width - 1);
      return x_ori + roi_start * (in_width - 1);
    }
  }
  return 0;
}

void CubicCoefficients(double r, double a, double* c) {
  const double s = 1 - r;
  c[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
  c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  c[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  c[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

}  // namespace

AxisTaps ComputeAxisTaps(const ResizeParams& p, int64_t in_dim, int64_t out_dim, double scale, double roi_start,
                         double roi_end) {
  AxisTaps t;
  t.taps = p.mode == ResizeMode::kNearest ? 1 : p.mode == ResizeMode::kLinear ? 2 : 4;
  t.index.assign(out_dim * t.taps, 0);
  t.weight.assign(out_dim * t.taps, 0.f);
  t.extrapolate.assign(out_dim, 0);
  const double out_width = scale * static_cast<double>(in_dim);
  t.identity = in_dim == out_dim;
  for (int64_t j = 0; j < out_dim; ++j) {
    const double x = SourceCoordinate(p, j, in_dim, out_width, scale, roi_start, roi_end);
    if (p.coordinate_mode == CoordinateMode::kTfCropAndResize && (x < 0 || x > static_cast<double>(in_dim - 1))) {
      t.extrapolate[j] = 1;
      t.any_extrapolate = true;
      t.identity = false;
      continue;
    }
    const double fl = std::floor(x);
    // An integral coordinate is the upper tap of the previous interval (ratio 1).
    const bool integral = fl == x;
    const int64_t x_int = static_cast<int64_t>(fl) - (integral ? 1 : 0);
    const double r = integral ? 1.0 : x - fl;
    double coeff[4] = {0, 0, 0, 0};
    int64_t first = x_int;  // index of tap 0
    switch (p.mode) {
      case ResizeMode::kNearest: {
        bool upper = true;
        if (!integral) {
          switch (p.nearest_mode) {
            case NearestMode::kRoundPreferFloor: upper = r > 0.5; break;
            case NearestMode::kRoundPreferCeil: upper = r >= 0.5; break;
            case NearestMode::kFloor: upper = false; break;
            case NearestMode::kCeil: upper = true; break;
          }
        }
        first = x_int + (upper ? 1 : 0);
        coeff[0] = 1;
        break;
      }
      case ResizeMode::kLinear:
        coeff[0] = 1 - r;
        coeff[1] = r;
        break;
      case ResizeMode::kCubic:
        first = x_int - 1;
        CubicCoefficients(r, p.cubic_coeff_a, coeff);
        break;
    }
    if (p.exclude_outside) {
      double sum = 0;
      for (int k = 0; k < t.taps; ++k) {
        const int64_t idx = first + k;
        if (idx < 0 || idx >= in_dim) coeff[k] = 0;
        sum += coeff[k];
      }
      if (sum != 0) {
        for (int k = 0; k < t.taps; ++k) coeff[k] /= sum;
      }
    }
    for (int k = 0; k < t.taps; ++k) {
      const int64_t idx = std::clamp<int64_t>(first + k, 0, in_dim - 1);
      t.index[j * t.taps + k] = idx;
      t.weight[j * t.taps + k] = static_cast<float>(coeff[k]);
      if (coeff[k] != 0 && (idx != j || coeff[k] != 1)) t.identity = false;
    }
  }
  return t;
}

}  // namespace qfuse::runtime::kernels
