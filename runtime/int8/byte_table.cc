#include "runtime/int8/byte_table.h"

#include <immintrin.h>

#include "runtime/cpu_isa.h"

namespace qfuse::runtime::int8 {
namespace {

// 32 bytes at a time: vpshufb looks up the low nibble in each of the 16 rows of 16 entries,
// and the row whose index equals the high nibble is kept (compare, and, or). Returns the
// bytes done.
__attribute__((target("avx2"))) int64_t LookupBytesAvx2(const uint8_t* table, const uint8_t* x, int64_t n,
                                                        uint8_t* y) {
  __m256i rows[16];
  for (int k = 0; k < 16; ++k) {
    rows[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * k)));
  }
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i lo = _mm256_and_si256(v, nibble);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
    __m256i out = _mm256_setzero_si256();
    for (int k = 0; k < 16; ++k) {
      const __m256i hit = _mm256_cmpeq_epi8(hi, _mm256_set1_epi8(static_cast<char>(k)));
      out = _mm256_or_si256(out, _mm256_and_si256(hit, _mm256_shuffle_epi8(rows[k], lo)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), out);
  }
  return i;
}

}  // namespace

void LookupBytes(const std::array<uint8_t, 256>& table, const uint8_t* x, int64_t n, uint8_t* y) {
  const uint8_t* t = table.data();
  int64_t i = IsaAllowed(Isa::kAvx2) ? LookupBytesAvx2(t, x, n, y) : 0;
  for (; i < n; ++i) y[i] = t[x[i]];
}

}  // namespace qfuse::runtime::int8
