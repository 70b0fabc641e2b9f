#include "runtime/kernels/nn/layer_norm_row.h"

#include <cmath>

namespace qfuse::runtime::kernels {
namespace {

// The lane-structured arithmetic of layer_norm_row.h, written once: inlined into a portable
// caller (std::fma a library call there) and into an AVX2 + FMA caller (std::fma an instruction).
// Built with -ffp-contract=off, so only the std::fma calls fuse.
// `simplified`: the mean is 0 (never computed; x - 0 is x), there is no bias, and n >= 8.
__attribute__((always_inline)) inline LayerNormRowStats Row(const float* x, const float* scale, const float* bias,
                                                            int64_t n, float epsilon, float* y, bool simplified) {
  if (n < 8 && !simplified) {
    float mean = 0.f, m2 = 0.f;
    for (int64_t h = 0; h < n; ++h) {
      const float delta = x[h] - mean;
      mean = mean + delta / static_cast<float>(h + 1);
      m2 = m2 + (x[h] - mean) * delta;
    }
    const float std_dev = std::sqrt(m2 / static_cast<float>(n) + epsilon);
    for (int64_t h = 0; h < n; ++h) {
      const float scaled = (x[h] - mean) / std_dev * scale[h];
      y[h] = bias != nullptr ? scaled + bias[h] : scaled;
    }
    return {mean, 1.f / std_dev};
  }
  float mean = 0.f;
  int64_t i = 0;
  if (!simplified) {
    double lanes[4] = {0, 0, 0, 0};
    for (; i + 4 <= n; i += 4) {
      for (int k = 0; k < 4; ++k) lanes[k] += static_cast<double>(x[i + k]);
    }
    double sum = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
    for (; i < n; ++i) sum += static_cast<double>(x[i]);
    mean = static_cast<float>(sum / static_cast<double>(n));
  }

  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) {
      const float d = x[i + k] - mean;
      acc[k] = std::fma(d, d, acc[k]);
    }
  }
  const float r0 = acc[0] + acc[4], r1 = acc[1] + acc[5], r2 = acc[2] + acc[6], r3 = acc[3] + acc[7];
  float var = (r0 + r2) + (r1 + r3);
  if (n - i >= 4) {
    float squares[4];
    for (int k = 0; k < 4; ++k) {
      const float d = x[i + k] - mean;
      squares[k] = d * d;
    }
    for (int k = 0; k < 4; ++k) var = var + squares[k];
    i += 4;
  }
  for (; i < n; ++i) {
    const float d = x[i] - mean;
    var = std::fma(d, d, var);
  }
  const float inv = 1.f / std::sqrt(var / static_cast<float>(n) + epsilon);
  if (bias != nullptr) {
    for (int64_t h = 0; h < n; ++h) y[h] = std::fma((x[h] - mean) * inv, scale[h], bias[h]);
  } else {
    for (int64_t h = 0; h < n; ++h) y[h] = (x[h] - mean) * inv * scale[h];
  }
  return {mean, inv};
}

LayerNormRowStats PortableRow(const float* x, const float* scale, const float* bias, int64_t n, float epsilon, float* y,
                              bool simplified) {
  return Row(x, scale, bias, n, epsilon, y, simplified);
}

__attribute__((target("avx2,fma"))) LayerNormRowStats FmaRow(const float* x, const float* scale, const float* bias,
                                                             int64_t n, float epsilon, float* y, bool simplified) {
  return Row(x, scale, bias, n, epsilon, y, simplified);
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

LayerNormRowStats LayerNormRow(const float* x, const float* scale, const float* bias, int64_t n, float epsilon,
                               float* y, bool vector) {
  return vector && HasAvx2Fma() ? FmaRow(x, scale, bias, n, epsilon, y, false)
                                : PortableRow(x, scale, bias, n, epsilon, y, false);
}

LayerNormRowStats SimplifiedLayerNormRow(const float* x, const float* scale, int64_t n, float epsilon, float* y,
                                         bool vector) {
  return vector && HasAvx2Fma() ? FmaRow(x, scale, nullptr, n, epsilon, y, true)
                                : PortableRow(x, scale, nullptr, n, epsilon, y, true);
}

}  // namespace qfuse::runtime::kernels
