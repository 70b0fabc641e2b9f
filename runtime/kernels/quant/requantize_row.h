// numerics::RequantizeOnnxRow with one multiplier, eight values per AVX2 step where the ISA
// cap allows it (numerics/ has no ISA dispatch; runtime/cpu_isa.h is the runtime's):
// float32(acc) * multiplier, clamped to [min - zp, max - zp] as MAXPS / MINPS clamp, rounded
// half to even (vcvtps2dq under the default rounding mode, as lrintf), plus the zero point.
// Every value is RequantizeOnnx's (requantize_row_test).
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_REQUANTIZE_ROW_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_REQUANTIZE_ROW_H_

#include <cstdint>

namespace qfuse::runtime::kernels::quant {

// out[i] = numerics::RequantizeOnnx<T>(acc[i], multiplier, zero_point) for i < n; T is int8_t
// or uint8_t. `vector`: the AVX2 path where the ISA cap allows it (tests compare the two).
template <typename T>
void RequantizeOnnxRowFast(const int32_t* acc, int64_t n, float multiplier, int32_t zero_point, T* out,
                           bool vector = true);

}  // namespace qfuse::runtime::kernels::quant

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_REQUANTIZE_ROW_H_
