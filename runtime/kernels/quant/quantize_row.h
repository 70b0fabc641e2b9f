// ONNX QuantizeLinear of a row of float32 values with one scale and zero point, 32 values per
// AVX2 step where the ISA cap allows it: the same float32 division (vdivps is IEEE like the
// scalar one), MAXPS / MINPS clamp (a NaN gives the low bound, as numerics::ClampLikeMlas) and
// cvtps2dq under the default rounding (lrintf, half to even), so every byte is
// numerics::QuantizeLinear's (quant_ops_test compares the two on ties, near-ties, saturation,
// infinities and NaN). Used by the QuantizeLinear kernel and by the float epilogue of the
// integer units' non-linear activations (runtime/int8/output_stage.h).
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_QUANTIZE_ROW_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_QUANTIZE_ROW_H_

#include <cstdint>

namespace qfuse::runtime::kernels::quant {

// out[i] = numerics::QuantizeLinear<T>(x[i], scale, zero_point) for i < n; T is int8_t or
// uint8_t, zero_point within T's range. `vector` false: one value at a time (a caller's own
// cap, such as the output stage's RequantizeIsa level).
template <typename T>
void QuantizeLinearRow(const float* x, int64_t n, float scale, int32_t zero_point, T* out, bool vector = true);

}  // namespace qfuse::runtime::kernels::quant

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_QUANTIZE_ROW_H_
