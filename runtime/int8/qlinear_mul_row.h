// onnxruntime's QLinearMul (numerics::OnnxQLinearMul) on rows of bytes without its 64 KiB
// table, eight outputs per AVX2 instruction sequence:
//   p = (a - zp_a) * (b - zp_b) in int32 (exact), f = float32(p) * ratio, then + float32(zp_c)
//   (two roundings, no fused multiply-add), rounded half to even, clamped to [qmin, qmax].
// The QLinearMul kernel uses it only after checking it against its table on all 65536 input
// pairs (a mismatch keeps the table), so its bytes are the table's by construction. The table
// costs a dependent load per byte where the row does eight bytes in a few instructions: a
// squeeze-excitation scale, whose two operands both vary along channels-last rows.
#ifndef QFUSE_RUNTIME_INT8_QLINEAR_MUL_ROW_H_
#define QFUSE_RUNTIME_INT8_QLINEAR_MUL_ROW_H_

#include <cstdint>

namespace qfuse::runtime::int8 {

struct OnnxMulRow {
  int32_t a_zero_point = 0, b_zero_point = 0, c_zero_point = 0;
  float ratio = 1.f;                        // numerics::OnnxQLinearMulRatio
  bool a_signed = false, b_signed = false;  // INT8 (else UINT8) inputs
  int32_t qmin = 0, qmax = 255;             // the output type's range
};

// y[i] for i < the returned count, a multiple of 8 no larger than n (0 under a cap below
// AVX2); the caller does the rest.
int64_t OnnxQLinearMulRowAvx2(const OnnxMulRow& p, const uint8_t* a, const uint8_t* b, int64_t n, uint8_t* y);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_QLINEAR_MUL_ROW_H_
