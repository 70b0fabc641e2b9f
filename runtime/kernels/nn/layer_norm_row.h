// One row of LayerNormalization in float32 as onnxruntime 1.30's x86 CPU kernel computes it
// (MlasLayerNormKernelAvx2 for rows of 8 or more elements, its scalar fallback below that), so
// that a LayerNormalization between DequantizeLinear and QuantizeLinear rounds as there. With
// f() rounding to float32, fma() one rounding, n the row length:
//  n >= 8:
//   mean: four double lanes L_k += x[4j + k] over whole groups of 4, then (L0 + L2) + (L1 + L3),
//         then the last n mod 4 values added in order, mean = f(sum / n);
//   var:  eight float lanes A_k = fma(d, d, A_k), d = f(x - mean), over whole groups of 8, then
//         f(f(A0 + A4 + ... pairs) ...) as var = f(f(r0 + r2) + f(r1 + r3)), r_k = f(A_k + A_k+4);
//         of the n mod 8 tail values, when there are at least 4, the first 4 as var += f(d * d)
//         (a product, then a sum, in order), every other tail value var = fma(d, d, var);
//   inv = f(1 / sqrtf(f(f(var / n) + epsilon)));  y = fma(f(f(x - mean) * inv), scale, bias)
//         (without a bias: f(f(f(x - mean) * inv) * scale)).
//  n < 8: Welford in float (mean += d / (h + 1), M2 += (x - mean) * d), std = sqrtf(M2 / n +
//   epsilon), y = f(f(f(x - mean) / std) * scale) + bias, inv = 1 / std.
// Simplified (onnxruntime's SimplifiedLayerNormalization, an RMS norm, which its
// SimplifiedLayerNormFusion makes of Pow -> ReduceMean -> Add -> Sqrt -> Div -> Mul): the same
// kernel with the mean taken as 0 and no bias, which onnxruntime runs for n >= 16 (shorter
// rows: its scalar form, kernels/nn/normalization.cc).
// The AVX2 + FMA path and the portable one (std::fma) give the same bits (layer_norm_row_test);
// that they are onnxruntime's is models/zoo/float_ops_probe.py's check.
#ifndef QFUSE_RUNTIME_KERNELS_NN_LAYER_NORM_ROW_H_
#define QFUSE_RUNTIME_KERNELS_NN_LAYER_NORM_ROW_H_

#include <cstdint>

namespace qfuse::runtime::kernels {

struct LayerNormRowStats {
  float mean = 0.f;
  float inv_std_dev = 0.f;
};

// y[i] for i < n from x (bias may be null); `vector`: the AVX2 + FMA path where the CPU has it.
LayerNormRowStats LayerNormRow(const float* x, const float* scale, const float* bias, int64_t n, float epsilon,
                               float* y, bool vector = true);

// The simplified form (no mean, no bias); n >= 16.
LayerNormRowStats SimplifiedLayerNormRow(const float* x, const float* scale, int64_t n, float epsilon, float* y,
                                         bool vector = true);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_NN_LAYER_NORM_ROW_H_
