// Integer GEMM for quantized kernels: C_int32[M,N] = sum_k (A[m,k] - a_zp) * B[k,n] with
// uint8 or int8 activations A (row-major) and int8 weights B packed once (at Prepare), or
// in each Run for an activation B (PackCenteredInt8Weights).
//
// Arithmetic: int8 A is mapped to uint8 by a_u = a + 128 (and a_zp_u = a_zp + 128), so
// every path computes sum_k a_u * b (uint8 x int8, a_u in [0, 255]) and subtracts
// a_zp_u * colsum(B)[n]. Intermediate sums are taken modulo 2^32; the result is exact
// whenever the true value fits in int32, which callers guarantee with
// numerics::CheckAccumulatorFitsInt32. All paths are bit-identical:
//  - kAvx512Vnni: _mm512_dpbusd_epi32 (u8 x s8, 4 products into an int32 lane, no
//    intermediate saturation);
//  - kAvxVnni: the same sums with the VEX-encoded 256-bit _mm256_dpbusd_avx_epi32 (AVX-VNNI:
//    Alder Lake and later client cores, Zen 5; where the CPU has it and cpu_isa.h's VnniAllowed,
//    which the avx512 cap is not);
//  - kAvx2 when PackedInt8Weights::fits_maddubs (every |b| <= 64, e.g. reduce_range
//    weights): _mm256_maddubs_epi16 on the packed bytes as they are (A's 4 bytes of a
//    k-group broadcast to every column) gives int16 pair sums a0*b0 + a1*b1, then
//    _mm256_madd_epi16 with ones adds the two pairs of a column into int32. maddubs
//    saturates to int16, but |a0*b0 + a1*b1| <= 255 * 64 * 2 = 32640 <= 32767, so it never
//    does and every pair sum is exact; each group is widened to int32 before the next one
//    is added (two pair sums could reach 65280). The last group's A bytes past K are zero
//    (copied into a zeroed word; no read goes past a row), as are the packed B bytes;
//  - kAvx2 otherwise: both operands widened to int16 and multiplied with
//    _mm256_madd_epi16, whose pairwise int32 sums cannot saturate for u8 x s8
//    (|255 * -128 * 2| < 2^31). With 8-bit weights maddubs is not used: its pair sum
//    saturates (255 * 127 * 2 > 32767) unless activations are limited to 7 bits, which
//    would change results;
//  - kScalar: the same sums in uint32, reading the same packed layout.
// The path is chosen at run time from runtime/cpu_isa.h (QFUSE_MAX_ISA caps it; per-function target
// attributes; the rest of the build keeps the baseline ISA).
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_INT8_GEMM_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_INT8_GEMM_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "numerics/requantize.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {

// Columns per packed panel (one 512-bit register of int32 accumulators).
inline constexpr int64_t kInt8GemmPanel = 16;
// Largest |b| for which the AVX2 maddubs path is exact (255 * 64 * 2 <= 32767).
inline constexpr int kInt8GemmMaddubsMaxAbsWeight = ::qfuse::numerics::kMaxAbsInt16PairWeight;

// B[K,N] packed in panels of kInt8GemmPanel columns; within a panel, each group of 4
// consecutive k holds the 4 values of column j adjacently:
//   data[((panel * k_groups + g) * kInt8GemmPanel + j) * 4 + t] = B[4g + t][panel * 16 + j]
// zero past K and N.
struct PackedInt8Weights {
  int64_t k = 0;
  int64_t n = 0;
  int64_t k_groups = 0;            // ceil(K / 4)
  int64_t panels = 0;              // ceil(N / 16)
  std::vector<int8_t> data;        // panels * k_groups * 64 bytes
  std::vector<int32_t> col_sums;   // sum_k B[k][n], panels * 16 entries (0 past N)
  std::vector<int16_t> wide;       // `data` widened to int16, same order (the AVX2 madd path;
                                   // may be empty: PackCenteredInt8Weights, then kAvx2 runs kScalar's rows)
  // True when every |B[k][n]| <= kInt8GemmMaddubsMaxAbsWeight: kAvx2 then uses maddubs.
  // Clearing it is always safe (the int16 madd path, e.g. to compare the two); setting it
  // for weights outside [-64, 64] gives wrong results.
  bool fits_maddubs = false;
};

// Packs B[k][n] = b[k * stride_k + n * stride_n] (weights [N,K] row-major: stride_k 1,
// stride_n K; [K,N] row-major: stride_k N, stride_n 1).
PackedInt8Weights PackInt8Weights(const int8_t* b, int64_t k, int64_t n, int64_t stride_k, int64_t stride_n);

// B[k][n] = b[k * stride_k + n * stride_n] - zero_points[n or 0] of a uint8 or int8 B
// (weights prepared once, or an activation B packed for each Run).
template <typename T>
struct CenteredWeights {
  const T* b = nullptr;
  int64_t k = 0, n = 0, stride_k = 0, stride_n = 1;
  const int32_t* zero_points = nullptr;  // n values, or 1 when !zero_point_per_column
  bool zero_point_per_column = false;
  // Also the int16 copy (PackedInt8Weights::wide) the AVX2 path reads; without it that path
  // runs the scalar rows (callers that pack for one GEMM under a cap with VNNI leave it out).
  bool with_wide = true;
};
// The centred B packed (the layout above) in one pass over b; nullopt when a centred value
// lies outside [-128, 127]. *max_abs: the largest |centred value|, set either way.
// PackInt8Weights is this with zero point 0.
template <typename T>
std::optional<PackedInt8Weights> PackCenteredInt8Weights(const CenteredWeights<T>& w, int64_t* max_abs);

enum class Int8GemmIsa { kScalar, kAvx2, kAvxVnni, kAvx512Vnni };

// The fastest path this CPU supports (checked once).
Int8GemmIsa BestInt8GemmIsa();
bool Int8GemmIsaAvailable(Int8GemmIsa isa);
const char* Int8GemmIsaName(Int8GemmIsa isa);

struct Int8GemmArgs {
  int64_t m = 0;
  const void* a = nullptr;  // [M, lda] uint8_t, or int8_t when a_signed
  bool a_signed = false;
  int64_t lda = 0;          // >= K
  int32_t a_zero_point = 0;
  const int32_t* a_row_zero_points = nullptr;  // [M] per-row zero points; overrides a_zero_point
  int32_t* c = nullptr;     // [M, ldc] int32, overwritten
  int64_t ldc = 0;          // >= N
  const ThreadPool* pool = nullptr;  // null: calling thread only
  Int8GemmIsa isa = BestInt8GemmIsa();  // must be available
};

// C = (A - a_zp) * B as documented above.
void Int8Gemm(const Int8GemmArgs& args, const PackedInt8Weights& b);

}  // namespace qfuse::runtime::kernels::quant

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_INT8_GEMM_H_
