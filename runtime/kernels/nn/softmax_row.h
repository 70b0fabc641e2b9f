// Softmax and LogSoftmax of one contiguous row of n floats as onnxruntime 1.30 computes them
// on x86 (MlasComputeSoftmax: MlasReduceMaximumF32Kernel, then MlasComputeSumExpF32KernelFma3
// on an AVX2 machine or MlasComputeSumExpF32KernelAvx512F on an AVX-512 one, then its output
// kernels), so that a Softmax between DequantizeLinear and QuantizeLinear rounds as there:
//   m = max x;  e_i = exp(x_i + (-m)), by the kernel's own exp: v clamped below (at -88.37626
//   for kFma3, -103.97208 for kAvx512F),
//   t = fma(v, log2 e, 1.5 * 2^23), k = t - 1.5 * 2^23, r = fma(k, -ln2_hi, v),
//   r = fma(k, -ln2_lo, r), p = a degree-6 polynomial in r by fused multiply-adds, then
//     kFma3:    p times the float whose bits are (bits(t) << 23) + bits(1.0f) (2^k; 0 for k = -127);
//     kAvx512F: p * 2^k rounded once (vscalefps: subnormal where the product is);
//   S = the e_i summed in lanes, e_i into lane i mod L in order, then
//     kFma3 (L = 8):     ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
//     kAvx512F (L = 16): the same of b_j = a_(j+8) + a_j;
//   Softmax:    y_i = e_i * f(1 / S);   LogSoftmax: y_i = f(x_i + (-m)) - logf(S) (glibc's logf,
//   which onnxruntime calls too).
// The vector paths (AVX2 + FMA, AVX-512F) and the portable ones (std::fma) give the same bits
// (softmax_row_test); that they are onnxruntime's is models/zoo/float_ops_probe.py's check, on
// an AVX2 machine and an AVX-512 one. The order of the max matters only for rows whose
// maximum is a signed zero or a NaN, which are not replicated.
#ifndef QFUSE_RUNTIME_KERNELS_NN_SOFTMAX_ROW_H_
#define QFUSE_RUNTIME_KERNELS_NN_SOFTMAX_ROW_H_

#include <cstdint>

namespace qfuse::runtime::kernels {

// Which of onnxruntime's sum-of-exp kernels a row follows.
enum class SoftmaxSumKernel { kFma3, kAvx512F };

// The one onnxruntime runs on a machine at qfuse's ISA level (runtime/cpu_isa.h): kAvx512F
// where AVX-512 is allowed, else kFma3 (QFUSE_MAX_ISA=avx2 gives an AVX2 machine's bits).
// qfuse's AVX-512 level needs F, VL, BW and DQ; onnxruntime takes its AVX-512F kernel with F
// alone, so a CPU with AVX-512F but not the rest (Knights Landing) would get kFma3 here.
SoftmaxSumKernel OnnxruntimeSoftmaxSumKernel();

// y[i] for i < n (y may equal x only for Softmax), as `kernel` computes it; `vector`: that
// kernel's vector path where the ISA cap allows it (kFma3: where the CPU has AVX2 and FMA),
// else the portable one.
void SoftmaxRow(const float* x, int64_t n, bool log, float* y, SoftmaxSumKernel kernel, bool vector = true);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_NN_SOFTMAX_ROW_H_
