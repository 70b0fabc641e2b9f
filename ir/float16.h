// IEEE binary16 (FLOAT16) and bfloat16 conversions on uint16 bit patterns.
// Narrowing rounds to nearest, ties to even (except the explicitly truncating
// bfloat16 variant); overflow goes to +-inf; NaN stays a (quiet) NaN. Widening is exact.
#ifndef QFUSE_IR_FLOAT16_H_
#define QFUSE_IR_FLOAT16_H_

#include <cmath>
#include <cstdint>
#include <cstring>

namespace qfuse::ir {

inline float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else {
    // Zero or subnormal: mant * 2^-24 is exact in float.
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -v : v;
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// Rounds a double straight to binary16 (no double rounding through float).
inline uint16_t DoubleToHalfBits(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  const double a = std::fabs(v);
  constexpr double kOverflow = 65520.0;           // halfway between 65504 (max) and 2^16
  constexpr double kMinNormal = 6.103515625e-05;  // 2^-14
  if (a >= kOverflow) return sign | 0x7c00;
  if (a < kMinNormal) {
    // Subnormal: units of 2^-24; rounding up to 1024 yields the smallest normal.
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int e2;
  std::frexp(a, &e2);           // a = m * 2^e2, m in [0.5, 1)
  const int exponent = e2 - 1;  // a in [2^exponent, 2^(exponent+1))
  const uint32_t significand = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 10 - exponent)));  // [1024, 2048]
  // A carry out of the significand (2048) bumps the exponent through the addition.
  return sign | static_cast<uint16_t>((static_cast<uint32_t>(exponent + 15) << 10) + (significand - 1024));
}

inline float BFloat16BitsToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t FloatToBFloat16Bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  if (std::isnan(v)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t bias = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + bias) >> 16);
}

// Truncating float -> bfloat16 (drops the low 16 bits; NaN kept quiet). This is what
// ONNX 1.12's reference Cast (and its conformance data) does for FLOAT -> BFLOAT16.
inline uint16_t FloatToBFloat16BitsTruncate(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  if (std::isnan(v)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace qfuse::ir

#endif  // QFUSE_IR_FLOAT16_H_
