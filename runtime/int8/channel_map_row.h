// One channel of QLinearChannelMap (int8_ops.h) on a row of bytes without its 256-byte table,
// 16 (AVX-512) or 8 (AVX2) outputs per instruction sequence, each step a float32 operation as
// the table computes it (unary_requantization.h DequantizedTable):
//   d = float32(q - zp_x) * s_x;  a = d * scale + shift (two roundings);  a = clamp(a)
//   (none, Relu or Clip, as ir::ApplyUnitActivation);  y = QuantizeLinear(a) (a / s_y, clamped
//   as MLAS clamps, rounded half to even, + zp_y).
// A table lookup of 256 entries costs many shuffles per 16 bytes; this is a handful of vector
// operations. The kernel uses it for a channel only after checking it against that channel's
// table on all 256 input bytes (a mismatch keeps the table).
#ifndef QFUSE_RUNTIME_INT8_CHANNEL_MAP_ROW_H_
#define QFUSE_RUNTIME_INT8_CHANNEL_MAP_ROW_H_

#include <cstdint>

namespace qfuse::runtime::int8 {

struct ChannelMapRow {
  bool x_signed = false;  // INT8 (else UINT8) input
  int32_t x_zero_point = 0;
  float x_scale = 1.f;
  float scale = 1.f, shift = 0.f;  // the channel's affine
  enum class Clamp { kNone, kRelu, kClip } clamp = Clamp::kNone;
  float clip_min = 0.f, clip_max = 0.f;  // kClip
  bool y_signed = false;                 // INT8 (else UINT8) output
  int32_t y_zero_point = 0;
  float y_scale = 1.f;
};

// y[i] for i < the returned count (whole vectors, 0 under a cap below AVX2); the caller does
// the rest.
int64_t ChannelMapRowSimd(const ChannelMapRow& p, const uint8_t* x, int64_t n, uint8_t* y);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_CHANNEL_MAP_ROW_H_
