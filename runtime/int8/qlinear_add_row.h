// onnxruntime's QLinearAdd (numerics::OnnxQLinearAdd) on rows of bytes without its 64 KiB
// table, eight outputs per AVX2 instruction sequence:
//   c = fma(a, r_a, fma(b, r_b, F)), clamped to [qmin, qmax] as MAXPS / MINPS do, rounded
//   half to even, stored as the output type's bytes.
// The QLinearAdd kernel uses it only after checking it against its table on all 65536 input
// pairs (a mismatch keeps the table), so its bytes are the table's by construction.
#ifndef QFUSE_RUNTIME_INT8_QLINEAR_ADD_ROW_H_
#define QFUSE_RUNTIME_INT8_QLINEAR_ADD_ROW_H_

#include <cstdint>

#include "numerics/requantize.h"

namespace qfuse::runtime::int8 {

struct OnnxAddRow {
  numerics::OnnxAddMultipliers m;
  bool a_signed = false, b_signed = false;  // INT8 (else UINT8) inputs
  int32_t qmin = 0, qmax = 255;             // the output type's range
};

// y[i] for i < the returned count, a multiple of 8 no larger than n (0 without AVX2 + FMA or
// under a lower ISA cap); the caller does the rest.
int64_t OnnxQLinearAddRowAvx2(const OnnxAddRow& p, const uint8_t* a, const uint8_t* b, int64_t n, uint8_t* y);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_QLINEAR_ADD_ROW_H_
