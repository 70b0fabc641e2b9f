#include "runtime/kernels/nn/softmax_row.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::kernels {
namespace {

// The exp kernel's constants, as float32 bit patterns.
constexpr uint32_t kLowerBits = 0xC2B0C0A5;        // -88.37626 (the AVX2 kernel's LowerRangeSumExp)
constexpr uint32_t kScalefLowerBits = 0xC2CFF1B5;  // -103.97208 (the AVX-512F kernel's LowerRange)
constexpr uint32_t kLog2eBits = 0x3FB8AA3B;
constexpr uint32_t kShiftBits = 0x4B400000;  // 1.5 * 2^23
constexpr uint32_t kNegLn2HiBits = 0xBF317200;
constexpr uint32_t kNegLn2LoBits = 0xB5BFBE8E;
constexpr uint32_t kPolyBits[7] = {0x3AB4A000, 0x3C092F6E, 0x3D2AADAD, 0x3E2AAA28, 0x3EFFFFFB, 0x3F800000, 0x3F800000};
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

// p * 2^m for an integer-valued m, rounded once to nearest even as vscalefps rounds it (with
// subnormal results, which the AVX2 kernel's exponent bits cannot give). m is in [-150, 0] for
// every row without a NaN; beyond [-200, 200] the result is what it is at those bounds (0 or an
// infinity), and a NaN m gives a NaN.
inline float ScaleByPowerOfTwo(float p, float m) {
  if (m != m) return p * m;
  const int k = static_cast<int>(m < -200.f ? -200.f : (m > 200.f ? 200.f : m));
  if (k >= -126 && k <= 127) return p * FromBits(static_cast<uint32_t>(k + 127) << 23);
  // Two steps: the first is exact (a normal result, as p >= 2^-23), the second rounds once.
  if (k < -190) return p * 0.f;  // below half the least subnormal
  if (k < -126) return (p * FromBits(static_cast<uint32_t>(k + 64 + 127) << 23)) * FromBits(0x1F800000);  // 2^-64
  return (p * FromBits(static_cast<uint32_t>(k) << 23)) * FromBits(0x7F000000);  // 2^(k - 127), then 2^127
}

// One value of the AVX-512F kernel's exp: the same steps from a lower clamp of -103.97208 (where
// exp underflows to 0), then vscalefps(p, k).
__attribute__((always_inline)) inline float ExpScalef(float v) {
  const float lower = FromBits(kScalefLowerBits), shift = FromBits(kShiftBits);
  v = lower > v ? lower : v;
  const float k = std::fma(v, FromBits(kLog2eBits), shift) - shift;
  float r = std::fma(k, FromBits(kNegLn2HiBits), v);
  r = std::fma(k, FromBits(kNegLn2LoBits), r);
  float p = FromBits(kPolyBits[0]);
  for (int i = 1; i < 7; ++i) p = std::fma(p, r, FromBits(kPolyBits[i]));
  return ScaleByPowerOfTwo(p, k);
}

// Sums e_i = exp(x_i + neg_max) into lanes[i % kLanes] from `begin` on, storing e_i in y when
// given; exp is Exp (the AVX2 kernel, kLanes 8) or ExpScalef (the AVX-512F one, kLanes 16).
template <int kLanes, bool kScalef>
__attribute__((always_inline)) inline void SumExpTail(const float* x, int64_t begin, int64_t n, float neg_max, float* y,
                                                      float (&lanes)[kLanes]) {
  for (int64_t i = begin; i < n; ++i) {
    const float e = kScalef ? ExpScalef(x[i] + neg_max) : Exp(x[i] + neg_max);
    if (y != nullptr) y[i] = e;
    lanes[i % kLanes] += e;
  }
}

// The AVX2 kernel's reduction of its eight lanes.
inline float ReduceLanes(const float (&a)[8]) {
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

// The AVX-512F kernel's: the upper eight lanes added to the lower, then two vhaddps and a last add.
inline float ReduceLanes(const float (&a)[16]) {
  float b[8];
  for (int j = 0; j < 8; ++j) b[j] = a[j + 8] + a[j];
  return ReduceLanes(b);
}

__attribute__((always_inline)) inline void Finish(const float* x, int64_t n, bool log, float neg_max, float sum,
                                                  float* y) {
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

template <int kLanes, bool kScalef>
void PortableRow(const float* x, int64_t n, bool log, float* y) {
  const float neg_max = NegativeMax(x, n);
  float lanes[kLanes] = {};
  SumExpTail<kLanes, kScalef>(x, 0, n, neg_max, log ? nullptr : y, lanes);
  Finish(x, n, log, neg_max, ReduceLanes(lanes), y);
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
  SumExpTail<8, false>(x, i, n, neg_max, log ? nullptr : y, lanes);
  Finish(x, n, log, neg_max, ReduceLanes(lanes), y);
}

// The AVX-512F kernel: sixteen lanes, exp scaled by vscalefps.
__attribute__((target("avx512f,fma"))) void Avx512Row(const float* x, int64_t n, bool log, float* y) {
  const float neg_max = NegativeMax(x, n);
  const __m512 bias = _mm512_set1_ps(neg_max);
  const __m512 shift = _mm512_set1_ps(FromBits(kShiftBits));
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_max_ps(_mm512_set1_ps(FromBits(kScalefLowerBits)), _mm512_add_ps(_mm512_loadu_ps(x + i), bias));
    const __m512 k = _mm512_sub_ps(_mm512_fmadd_ps(v, _mm512_set1_ps(FromBits(kLog2eBits)), shift), shift);
    v = _mm512_fmadd_ps(k, _mm512_set1_ps(FromBits(kNegLn2HiBits)), v);
    v = _mm512_fmadd_ps(k, _mm512_set1_ps(FromBits(kNegLn2LoBits)), v);
    __m512 p = _mm512_set1_ps(FromBits(kPolyBits[0]));
    for (int j = 1; j < 7; ++j) p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(FromBits(kPolyBits[j])));
    const __m512 e = _mm512_scalef_ps(p, k);
    if (!log) _mm512_storeu_ps(y + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  float lanes[16];
  _mm512_storeu_ps(lanes, acc);
  SumExpTail<16, true>(x, i, n, neg_max, log ? nullptr : y, lanes);
  Finish(x, n, log, neg_max, ReduceLanes(lanes), y);
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace

SoftmaxSumKernel OnnxruntimeSoftmaxSumKernel() {
  return IsaAllowed(Isa::kAvx512) ? SoftmaxSumKernel::kAvx512F : SoftmaxSumKernel::kFma3;
}

void SoftmaxRow(const float* x, int64_t n, bool log, float* y, SoftmaxSumKernel kernel, bool vector) {
  if (kernel == SoftmaxSumKernel::kAvx512F) {
    if (vector && IsaAllowed(Isa::kAvx512)) {
      Avx512Row(x, n, log, y);
    } else {
      PortableRow<16, true>(x, n, log, y);
    }
  } else if (vector && HasAvx2Fma()) {
    FmaRow(x, n, log, y);
  } else {
    PortableRow<8, false>(x, n, log, y);
  }
}

}  // namespace qfuse::runtime::kernels
