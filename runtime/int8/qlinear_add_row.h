// onnxruntime's QLinearAdd (numerics::OnnxQLinearAdd) on rows of bytes without its 64 KiB
// table, eight outputs per AVX2 instruction sequence:
//   c = fma(a, r_a, fma(b, r_b, F)), clamped to [qmin, qmax] as MAXPS / MINPS do, rounded
//   half to even, stored as the output type's bytes;
//   with a folded clamp (a Relu / Clip after the Add, as its QLinearClamp computes it in mode
//   onnx): f = float32(q - zp) * s, clamped to [lo, hi], then QuantizeLinear to the clamp's
//   output grid.
// The QLinearAdd kernel uses it only after checking it against its table on all 65536 input
// pairs (a mismatch keeps the table), so its bytes are the table's by construction.
#ifndef QFUSE_RUNTIME_INT8_QLINEAR_ADD_ROW_H_
#define QFUSE_RUNTIME_INT8_QLINEAR_ADD_ROW_H_

#include <cstdint>
#include <optional>

#include "numerics/requantize.h"

namespace qfuse::runtime::int8 {

struct OnnxAddRow {
  numerics::OnnxAddMultipliers m;
  bool a_signed = false, b_signed = false;  // INT8 (else UINT8) inputs
  int32_t qmin = 0, qmax = 255;             // the Add's output type's range
  struct Clamp {
    float in_scale = 1.f;  // the Add's output grid
    int32_t in_zero_point = 0;
    float lo = 0.f, hi = 0.f;  // the clamp's bounds
    float out_scale = 1.f;     // the clamp's output grid and range
    int32_t out_zero_point = 0, out_min = 0, out_max = 255;
  };
  std::optional<Clamp> clamp;
};

// y[i] for i < the returned count, a multiple of 8 no larger than n (0 without AVX2 + FMA or
// under a lower ISA cap); the caller does the rest.
int64_t OnnxQLinearAddRowAvx2(const OnnxAddRow& p, const uint8_t* a, const uint8_t* b, int64_t n, uint8_t* y);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_QLINEAR_ADD_ROW_H_
