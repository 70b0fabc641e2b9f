// Softmax and LogSoftmax of one contiguous row of n floats as onnxruntime 1.30 computes them
// on x86 with AVX2 and FMA (MlasComputeSoftmax: MlasReduceMaximumF32Kernel,
// MlasComputeSumExpF32KernelFma3 and its output kernels), so that a Softmax between
// DequantizeLinear and QuantizeLinear rounds as there:
//   m = max x;  e_i = exp(x_i + (-m)), by the kernel's own exp: v clamped below at -88.37626,
//   t = fma(v, log2 e, 1.5 * 2^23), k = t - 1.5 * 2^23, r = fma(k, -ln2_hi, v),
//   r = fma(k, -ln2_lo, r), p = a degree-6 polynomial in r by fused multiply-adds, times the
//   float whose bits are (bits(t) << 23) + bits(1.0f) (2^k; 0 for k = -127);
//   S = the e_i summed in eight lanes (e_i into lane i mod 8, in order), then
//   ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
//   Softmax:    y_i = e_i * f(1 / S);   LogSoftmax: y_i = f(x_i + (-m)) - logf(S) (glibc's logf,
//   which onnxruntime calls too).
// The AVX2 + FMA path and the portable one (std::fma) give the same bits (softmax_row_test);
// that they are onnxruntime's is models/zoo/float_ops_probe.py's check. The order of the max
// matters only for rows whose maximum is a signed zero or a NaN, which are not replicated.
#ifndef QFUSE_RUNTIME_KERNELS_NN_SOFTMAX_ROW_H_
#define QFUSE_RUNTIME_KERNELS_NN_SOFTMAX_ROW_H_

#include <cstdint>

namespace qfuse::runtime::kernels {

// y[i] for i < n (y may equal x only for Softmax); `vector`: the AVX2 + FMA path where the CPU has it.
void SoftmaxRow(const float* x, int64_t n, bool log, float* y, bool vector = true);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_NN_SOFTMAX_ROW_H_
