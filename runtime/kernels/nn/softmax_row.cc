#include "runtime/kernels/nn/softmax_row.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace qfuse::runtime::kernels {
namespace {

// The exp kernel's constants, as float32 bit patterns.
constexpr uint32_t kLowerBits = 0xC2B0C0A5;     // -88.37626
constexpr uint32_t kLog2eBits = 0x3FB8AA3B;
constexpr uint32_t kShiftBits = 0x4B400000;     // 1.5 * 2^23
constexpr uint32_t kNegLn2HiBits = 0xBF317200;
constexpr uint32_t kNegLn2LoBits = 0xB5BFBE8E;
constexpr uint32_t kPolyBits[7] = {0x3AB4A000, 0x3C092F6E, 0x3D2AADAD, 0x3E2AAA28,
                                   0x3EFFFFFB, 0x3F800000, 0x3F800000};
constexpr uint32_t kOneBits = 0x3F800000;

inline float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

inline uint32_t ToBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// One value of the kernel's exp (std::fma: an instruction inside the FMA caller).
__attribute__((always_inline)) inline float Exp(float v) {
  const float lower = FromBits(kLowerBits), shift = FromBits(kShiftBits);
  v = lower > v ? lower : v;  // MAXPS(lower, v)
  const float t = std::fma(v, FromBits(kLog2eBits), shift);
  const float k = t - shift;
  float r = std::fma(k, FromBits(kNegLn2HiBits), v);
  r = std::fma(k, FromBits(kNegLn2LoBits), r);
  float p = FromBits(kPolyBits[0]);
  for (int i = 1; i < 7; ++i) p = std::fma(p, r, FromBits(kPolyBits[i]));
  return p * FromBits((ToBits(t) << 23) + kOneBits);
}

// Eight lanes of Exp.
__attribute__((target("avx2,fma"))) inline __m256 Exp8(__m256 v) {
  const __m256 shift = _mm256_set1_ps(FromBits(kShiftBits));
  v = _mm256_max_ps(_mm256_set1_ps(FromBits(kLowerBits)), v);
  const __m256 t = _mm256_fmadd_ps(v, _mm256_set1_ps(FromBits(kLog2eBits)), shift);
  const __m256 k = _mm256_sub_ps(t, shift);
  __m256 r = _mm256_fmadd_ps(k, _mm256_set1_ps(FromBits(kNegLn2HiBits)), v);
  r = _mm256_fmadd_ps(k, _mm256_set1_ps(FromBits(kNegLn2LoBits)), r);
  __m256 p = _mm256_set1_ps(FromBits(kPolyBits[0]));
  for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FromBits(kPolyBits[i])));
  const __m256i scale =
      _mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(t), 23), _mm256_set1_epi32(static_cast<int>(kOneBits)));
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

// Sums e_i = Exp(x_i + neg_max) into lanes[i % 8] from `begin` on, storing e_i in y when given.
__attribute__((always_inline)) inline void SumExpTail(const float* x, int64_t begin, int64_t n, float neg_max,
                                                      float* y, float (&lanes)[8]) {
  for (int64_t i = begin; i < n; ++i) {
    const float e = Exp(x[i] + neg_max);
    if (y != nullptr) y[i] = e;
    lanes[i % 8] += e;
  }
}

__attribute__((always_inline)) inline void Finish(const float* x, int64_t n, bool log, float neg_max,
                                                  const float (&lanes)[8], float* y) {
  const float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  if (log) {
    const float log_sum = std::log(sum);
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] + neg_max) - log_sum;
  } else {
    const float inv = 1.f / sum;
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] * inv;
  }
}

float NegativeMax(const float* x, int64_t n) {
  float m = FromBits(0xFF7FFFFF);  // -FLT_MAX
  for (int64_t i = 0; i < n; ++i) m = m > x[i] ? m : x[i];
  return -m;
}

void PortableRow(const float* x, int64_t n, bool log, float* y) {
  const float neg_max = NegativeMax(x, n);
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  SumExpTail(x, 0, n, neg_max, log ? nullptr : y, lanes);
  Finish(x, n, log, neg_max, lanes, y);
}

__attribute__((target("avx2,fma"))) void FmaRow(const float* x, int64_t n, bool log, float* y) {
  const float neg_max = NegativeMax(x, n);
  const __m256 shift = _mm256_set1_ps(neg_max);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Exp8(_mm256_add_ps(_mm256_loadu_ps(x + i), shift));
    if (!log) _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, acc);
  SumExpTail(x, i, n, neg_max, log ? nullptr : y, lanes);
  Finish(x, n, log, neg_max, lanes, y);
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

void SoftmaxRow(const float* x, int64_t n, bool log, float* y, bool vector) {
  if (vector && HasAvx2Fma()) {
    FmaRow(x, n, log, y);
  } else {
    PortableRow(x, n, log, y);
  }
}

}  // namespace qfuse::runtime::kernels
