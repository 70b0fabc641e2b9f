#include "runtime/kernels/quant/int8_gemm.h"
#include "runtime/cpu_isa.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace qfuse::runtime::kernels::quant {
namespace {

constexpr int64_t kP = kInt8GemmPanel;
constexpr int64_t kGroupBytes = kP * 4;  // one k-group of a panel: 16 columns x 4 k
// A rows of one micro-tile per path, and the VNNI tile's panels: 12 x 2 = 24 zmm accumulators
// + 2 B + A of the 32. One panel per tile (8 rows) ran at about half the rate on an AMD Zen 5
// (int8_gemm_benchmark, one thread, ViT-tiny and 3x3 conv sizes: 475-552 against 852-1039
// GOPS; docs/performance.md); 8 x 2, 6 x 4 and 14 x 2 were slower on most sizes.
constexpr int kVnniRows = 12;
constexpr int kVnniPanels = 2;
constexpr int kAvx2Rows = 4;
// 3 x 16 columns: 6 int32 accumulators + 2 B + A + ones + 2 temporaries of the 16 ymm
// registers (measured: 4 rows spill an accumulator; 4 and 6 rows were 4-25% slower).
constexpr int kAvx2MaddubsRows = 3;
// 6 x 16 columns: 12 int32 accumulators + 2 B + A of the 16 ymm registers.
constexpr int kAvxVnniRows = 6;
// Rows per parallel task (a multiple of the VNNI, AVX-VNNI, madd and maddubs tiles) and the size worth
// a hand-off.
constexpr int64_t kRowsPerTask = 36;
constexpr int64_t kParallelMinMacs = 1 << 18;

// Flips int8 to uint8 (a + 128) in all 4 bytes of a group, or nothing for uint8 A.
inline uint32_t SignFlip(bool a_signed) { return a_signed ? 0x80808080u : 0u; }

// The zero point of row m, in the uint8 domain.
inline int32_t RowZeroPoint(const Int8GemmArgs& args, int64_t m) {
  const int32_t zp = args.a_row_zero_points != nullptr ? args.a_row_zero_points[m] : args.a_zero_point;
  return zp + (args.a_signed ? 128 : 0);
}

inline const uint8_t* Row(const Int8GemmArgs& args, int64_t m) {
  return static_cast<const uint8_t*>(args.a) + m * args.lda;
}

// Bytes 4g..4g+3 of an A row (already sign-flipped), zero past K: never reads past K.
inline uint32_t LoadGroup(const uint8_t* row, int64_t g, int64_t k, uint32_t flip) {
  uint32_t v = 0;
  std::memcpy(&v, row + 4 * g, static_cast<size_t>(std::min<int64_t>(4, k - 4 * g)));
  const uint32_t valid = k - 4 * g >= 4 ? 0xFFFFFFFFu : ((1u << (8 * (k - 4 * g))) - 1);
  return (v ^ flip) & valid;
}

void ScalarRows(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0, int64_t m1) {
  const uint8_t flip = args.a_signed ? 0x80 : 0;
  for (int64_t m = m0; m < m1; ++m) {
    const uint8_t* row = Row(args, m);
    const uint32_t zp = static_cast<uint32_t>(RowZeroPoint(args, m));
    for (int64_t p = 0; p < b.panels; ++p) {
      uint32_t acc[kP] = {};
      const int8_t* panel = b.data.data() + p * b.k_groups * kGroupBytes;
      for (int64_t kk = 0; kk < b.k; ++kk) {
        const uint32_t av = static_cast<uint8_t>(row[kk] ^ flip);
        const int8_t* bk = panel + (kk / 4) * kGroupBytes + kk % 4;
        for (int64_t j = 0; j < kP; ++j) acc[j] += av * static_cast<uint32_t>(static_cast<int32_t>(bk[4 * j]));
      }
      int32_t* c = args.c + m * args.ldc + p * kP;
      const int64_t cols = std::min(kP, b.n - p * kP);
      for (int64_t j = 0; j < cols; ++j) {
        c[j] = static_cast<int32_t>(acc[j] - zp * static_cast<uint32_t>(b.col_sums[p * kP + j]));
      }
    }
  }
}

// ---- AVX-512 VNNI: MR rows x NP 16-column panels per register tile (MR * NP int32
// accumulators; each A broadcast feeds NP dpbusd).
// Every tile unrolls its loops over rows (`#pragma GCC unroll`): left rolled, GCC -O2 keeps the
// accumulator arrays on the stack, which halved the throughput of every path.

template <int MR, int NP>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void VnniTile(const Int8GemmArgs& args,
                                                                       const PackedInt8Weights& b, int64_t m0,
                                                                       int64_t p0) {
  const uint32_t flip = SignFlip(args.a_signed);
  const uint8_t* rows[MR];
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) rows[r] = Row(args, m0 + r);
  const int8_t* panels[NP];
  #pragma GCC unroll 4
  for (int q = 0; q < NP; ++q) panels[q] = b.data.data() + (p0 + q) * b.k_groups * kGroupBytes;
  const int64_t full = b.k / 4;
  __m512i acc[MR][NP];
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    #pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) acc[r][q] = _mm512_setzero_si512();
  }
  for (int64_t g = 0; g < full; ++g) {
    __m512i bv[NP];
    #pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) bv[q] = _mm512_loadu_si512(panels[q] + g * kGroupBytes);
    #pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      uint32_t av;
      std::memcpy(&av, rows[r] + 4 * g, 4);
      const __m512i a = _mm512_set1_epi32(static_cast<int>(av ^ flip));
      #pragma GCC unroll 4
      for (int q = 0; q < NP; ++q) acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], a, bv[q]);
    }
  }
  if (full < b.k_groups) {
    __m512i bv[NP];
    #pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) bv[q] = _mm512_loadu_si512(panels[q] + full * kGroupBytes);
    #pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512i a = _mm512_set1_epi32(static_cast<int>(LoadGroup(rows[r], full, b.k, flip)));
      #pragma GCC unroll 4
      for (int q = 0; q < NP; ++q) acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], a, bv[q]);
    }
  }
  #pragma GCC unroll 4
  for (int q = 0; q < NP; ++q) {
    const int64_t p = p0 + q;
    const __m512i sums = _mm512_loadu_si512(b.col_sums.data() + p * kP);
    const int64_t cols = std::min(kP, b.n - p * kP);
    const __mmask16 mask = cols == kP ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << cols) - 1);
    #pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512i zp = _mm512_set1_epi32(RowZeroPoint(args, m0 + r));
      const __m512i out = _mm512_sub_epi32(acc[r][q], _mm512_mullo_epi32(zp, sums));
      _mm512_mask_storeu_epi32(args.c + (m0 + r) * args.ldc + p * kP, mask, out);
    }
  }
}

// `rows` (1..R) rows from m across every panel: NP panels per tile, the odd one alone.
template <int R, int NP>
void VnniRowTiles(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m, int rows) {
  if (rows == R) {
    int64_t p = 0;
    for (; p + NP <= b.panels; p += NP) VnniTile<R, NP>(args, b, m, p);
    for (; p < b.panels; ++p) VnniTile<R, 1>(args, b, m, p);
  } else if constexpr (R > 1) {
    VnniRowTiles<R - 1, NP>(args, b, m, rows);
  }
}

void VnniRows(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0, int64_t m1) {
  for (int64_t m = m0; m < m1; m += kVnniRows) {
    VnniRowTiles<kVnniRows, kVnniPanels>(args, b, m, static_cast<int>(std::min<int64_t>(kVnniRows, m1 - m)));
  }
}

// ---- AVX2: MR rows x 8 columns (half a panel) per register tile, int16 madd.

// a16[r][kk] = uint8 value of A[m0 + r][kk] (0 past K), kk < k_groups * 4; 16 bytes at a
// time (vpmovzxbw), never reading past K.
__attribute__((target("avx2"))) void WidenRows(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0,
                                               int rows, int16_t* a16) {
  const uint8_t flip = args.a_signed ? 0x80 : 0;
  const __m128i vflip = _mm_set1_epi8(static_cast<char>(flip));
  const int64_t k4 = b.k_groups * 4;
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = Row(args, m0 + r);
    int16_t* out = a16 + r * k4;
    int64_t kk = 0;
    for (; kk + 16 <= b.k; kk += 16) {
      const __m128i v = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + kk)), vflip);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kk), _mm256_cvtepu8_epi16(v));
    }
    for (; kk < b.k; ++kk) out[kk] = static_cast<uint8_t>(row[kk] ^ flip);
    for (; kk < k4; ++kk) out[kk] = 0;
  }
}

template <int MR>
__attribute__((target("avx2"))) void Avx2Tile(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0,
                                              const int16_t* a16, int64_t p) {
  const int64_t k4 = b.k_groups * 4;
  {
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t col0 = p * kP + half * 8;
      if (col0 >= b.n) break;
      // acc[r][0]: columns 0-3 of the half as (k0k1, k2k3) pair sums; acc[r][1]: 4-7.
      __m256i acc[MR][2];
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
      // The same bytes widened to int16 at packing (PackedInt8Weights::wide).
      const int16_t* bg = b.wide.data() + p * b.k_groups * kGroupBytes + half * 32;
      for (int64_t g = 0; g < b.k_groups; ++g, bg += kGroupBytes) {
        const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg));
        const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg + 16));
        #pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          int64_t av;
          std::memcpy(&av, a16 + r * k4 + 4 * g, 8);
          const __m256i a = _mm256_set1_epi64x(av);
          acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(a, b0));
          acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(a, b1));
        }
      }
      const int64_t cols = std::min<int64_t>(8, b.n - col0);
      const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.col_sums.data() + col0));
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        // hadd gives (c0 c1 c4 c5 | c2 c3 c6 c7); reorder the 64-bit pairs to c0..c7.
        const __m256i sum = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
        const __m256i zp = _mm256_set1_epi32(RowZeroPoint(args, m0 + r));
        const __m256i out = _mm256_sub_epi32(sum, _mm256_mullo_epi32(zp, sums));
        int32_t* c = args.c + (m0 + r) * args.ldc + col0;
        if (cols == 8) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), out);
        } else {
          alignas(32) int32_t tmp[8];
          _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), out);
          std::memcpy(c, tmp, cols * sizeof(int32_t));
        }
      }
    }
  }
}

// Rows in chunks of kAvx2ChunkRows, widened once; each panel of B (K x 16 int16) then meets
// every row block of the chunk while it is in cache.
void Avx2Rows(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0, int64_t m1) {
  constexpr int64_t kAvx2ChunkRows = 64;
  thread_local std::vector<int16_t> a16;
  const int64_t k4 = b.k_groups * 4;
  a16.resize(kAvx2ChunkRows * k4);
  for (int64_t c0 = m0; c0 < m1; c0 += kAvx2ChunkRows) {
    const int64_t c1 = std::min(m1, c0 + kAvx2ChunkRows);
    WidenRows(args, b, c0, static_cast<int>(c1 - c0), a16.data());
    for (int64_t p = 0; p < b.panels; ++p) {
      for (int64_t m = c0; m < c1; m += kAvx2Rows) {
        const int16_t* rows_a = a16.data() + (m - c0) * k4;
        switch (std::min<int64_t>(kAvx2Rows, c1 - m)) {
          case 4: Avx2Tile<4>(args, b, m, rows_a, p); break;
          case 3: Avx2Tile<3>(args, b, m, rows_a, p); break;
          case 2: Avx2Tile<2>(args, b, m, rows_a, p); break;
          default: Avx2Tile<1>(args, b, m, rows_a, p); break;
        }
      }
    }
  }
}

// The 8-column halves h < NH of panel p for rows m0..m0+MR-1: the int32 sums less each row's
// zero point times the column sums, stored for the columns below N (whole halves with plain
// stores: vpmaskmovd stores are slow on AMD cores).
template <int MR, int NH>
__attribute__((target("avx2"), always_inline)) inline void StoreAvx2Tile(const Int8GemmArgs& args,
                                                                         const PackedInt8Weights& b, int64_t m0,
                                                                         int64_t p, const __m256i (&acc)[MR][NH]) {
  #pragma GCC unroll 8
  for (int h = 0; h < NH; ++h) {
    const int64_t col0 = p * kP + 8 * h;
    const int cols = static_cast<int>(std::min<int64_t>(8, b.n - col0));
    const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.col_sums.data() + col0));
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256i zp = _mm256_set1_epi32(RowZeroPoint(args, m0 + r));
      const __m256i out = _mm256_sub_epi32(acc[r][h], _mm256_mullo_epi32(zp, sums));
      int32_t* c = args.c + (m0 + r) * args.ldc + col0;
      if (cols == 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), out);
      } else {
        _mm256_maskstore_epi32(c, mask, out);
      }
    }
  }
}

// ---- AVX2 with |B| <= 64 (fits_maddubs): MR rows x NH halves (8 columns each) of one panel
// per register tile; u8 x s8 maddubs into int16 pair sums, widened to int32 every group.
// Loops over r and h are unrolled so acc stays in registers (GCC -O2 leaves them rolled
// and keeps acc on the stack).

// acc[r][h] += the 4-k dot products of A row r's group `a[r]` (4 uint8 bytes) with the 8
// columns of half h of the packed group at `bg`. Exact: |pair sum| <= 255 * 64 * 2 < 2^15.
template <int MR, int NH>
__attribute__((target("avx2"), always_inline)) inline void MaddubsGroup(__m256i (&acc)[MR][NH], const int8_t* bg,
                                                                        const uint32_t (&a)[MR], __m256i ones) {
  __m256i bv[NH];
  #pragma GCC unroll 8
  for (int h = 0; h < NH; ++h) bv[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg + 32 * h));
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const __m256i av = _mm256_set1_epi32(static_cast<int>(a[r]));
    #pragma GCC unroll 8
    for (int h = 0; h < NH; ++h) {
      const __m256i pairs = _mm256_maddubs_epi16(av, bv[h]);
      acc[r][h] = _mm256_add_epi32(acc[r][h], _mm256_madd_epi16(pairs, ones));
    }
  }
}

// Rows m0..m0+MR-1 times columns 16p..16p+8*NH-1 (stores only the columns below N).
template <int MR, int NH>
__attribute__((target("avx2"))) void Avx2MaddubsTile(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0,
                                                     int64_t p) {
  const uint32_t flip = SignFlip(args.a_signed);
  const uint8_t* rows[MR];
  for (int r = 0; r < MR; ++r) rows[r] = Row(args, m0 + r);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[MR][NH];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    #pragma GCC unroll 8
    for (int h = 0; h < NH; ++h) acc[r][h] = _mm256_setzero_si256();
  }
  const int8_t* panel = b.data.data() + p * b.k_groups * kGroupBytes;
  const int64_t full = b.k / 4;
  uint32_t a[MR];
  for (int64_t g = 0; g < full; ++g) {
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      std::memcpy(&a[r], rows[r] + 4 * g, 4);
      a[r] ^= flip;
    }
    MaddubsGroup<MR, NH>(acc, panel + g * kGroupBytes, a, ones);
  }
  if (full < b.k_groups) {
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) a[r] = LoadGroup(rows[r], full, b.k, flip);
    MaddubsGroup<MR, NH>(acc, panel + full * kGroupBytes, a, ones);
  }
  StoreAvx2Tile<MR, NH>(args, b, m0, p, acc);
}

// One panel of MR rows: the second half of the panel only when it has columns below N.
template <int MR>
void Avx2MaddubsPanel(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0, int64_t p) {
  if (b.n - p * kP > 8) {
    Avx2MaddubsTile<MR, 2>(args, b, m0, p);
  } else {
    Avx2MaddubsTile<MR, 1>(args, b, m0, p);
  }
}

void Avx2MaddubsRows(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0, int64_t m1) {
  static_assert(kAvx2MaddubsRows == 3, "the switch below covers 1..3 rows");

  for (int64_t m = m0; m < m1; m += kAvx2MaddubsRows) {
    const int64_t rows = std::min<int64_t>(kAvx2MaddubsRows, m1 - m);
    for (int64_t p = 0; p < b.panels; ++p) {
      switch (rows) {
        case 3: Avx2MaddubsPanel<3>(args, b, m, p); break;
        case 2: Avx2MaddubsPanel<2>(args, b, m, p); break;
        default: Avx2MaddubsPanel<1>(args, b, m, p); break;
      }
    }
  }
}

// ---- AVX-VNNI: MR rows x NH halves (8 columns each) of one panel per register tile, the
// VEX-encoded 256-bit vpdpbusd (4 u8 x s8 products into an int32 lane, no intermediate
// saturation, as kAvx512Vnni): any int8 B.

template <int MR, int NH>
__attribute__((target("avx2,avxvnni"))) void AvxVnniTile(const Int8GemmArgs& args, const PackedInt8Weights& b,
                                                         int64_t m0, int64_t p) {
  const uint32_t flip = SignFlip(args.a_signed);
  const uint8_t* rows[MR];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) rows[r] = Row(args, m0 + r);
  __m256i acc[MR][NH];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    #pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) acc[r][h] = _mm256_setzero_si256();
  }
  const int8_t* panel = b.data.data() + p * b.k_groups * kGroupBytes;
  for (int64_t g = 0; g < b.k_groups; ++g) {
    const bool tail = 4 * g + 4 > b.k;
    __m256i bv[NH];
    #pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      bv[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + g * kGroupBytes + 32 * h));
    }
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      uint32_t a;
      if (tail) {
        a = LoadGroup(rows[r], g, b.k, flip);
      } else {
        std::memcpy(&a, rows[r] + 4 * g, 4);
        a ^= flip;
      }
      const __m256i av = _mm256_set1_epi32(static_cast<int>(a));
      #pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) acc[r][h] = _mm256_dpbusd_avx_epi32(acc[r][h], av, bv[h]);
    }
  }
  StoreAvx2Tile<MR, NH>(args, b, m0, p, acc);
}

// `rows` (1..R) rows from m across every panel, the second half of a panel only when it has
// columns below N.
template <int R>
void AvxVnniRowTiles(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m, int rows) {
  if (rows == R) {
    for (int64_t p = 0; p < b.panels; ++p) {
      if (b.n - p * kP > 8) {
        AvxVnniTile<R, 2>(args, b, m, p);
      } else {
        AvxVnniTile<R, 1>(args, b, m, p);
      }
    }
  } else if constexpr (R > 1) {
    AvxVnniRowTiles<R - 1>(args, b, m, rows);
  }
}

void AvxVnniRows(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0, int64_t m1) {
  for (int64_t m = m0; m < m1; m += kAvxVnniRows) {
    AvxVnniRowTiles<kAvxVnniRows>(args, b, m, static_cast<int>(std::min<int64_t>(kAvxVnniRows, m1 - m)));
  }
}

void RunRows(const Int8GemmArgs& args, const PackedInt8Weights& b, int64_t m0, int64_t m1) {
  switch (args.isa) {
    case Int8GemmIsa::kAvx512Vnni: VnniRows(args, b, m0, m1); break;
    case Int8GemmIsa::kAvxVnni: AvxVnniRows(args, b, m0, m1); break;
    case Int8GemmIsa::kAvx2:
      if (b.fits_maddubs) {
        Avx2MaddubsRows(args, b, m0, m1);
      } else if (!b.wide.empty()) {
        Avx2Rows(args, b, m0, m1);
      } else {  // packed without the int16 copy (PackCenteredInt8Weights)
        ScalarRows(args, b, m0, m1);
      }
      break;
    case Int8GemmIsa::kScalar: ScalarRows(args, b, m0, m1); break;
  }
}

// Packed weights of K x N zeros (the layout's padding included), to be filled in.
PackedInt8Weights ZeroPacked(int64_t k, int64_t n) {
  PackedInt8Weights packed;
  packed.k = k;
  packed.n = n;
  packed.k_groups = (k + 3) / 4;
  packed.panels = (n + kP - 1) / kP;
  packed.data.assign(packed.panels * packed.k_groups * kGroupBytes, 0);
  packed.col_sums.assign(packed.panels * kP, 0);
  return packed;
}

// The whole 4-row x 16-column blocks of a row-major B (stride_n 1): groups [0, groups) of
// panels [0, panels), centred and interleaved with SSE2 (the x86-64 baseline, so every ISA cap
// packs the same bytes as the element loop). *lowest / *highest take the centred extremes;
// col_sums gain the blocks' sums. An activation B (an attention's K^T or V) is packed in every
// Run, where the element loop cost about as much as the GEMM itself.
template <typename T>
void PackWholeBlocks(const CenteredWeights<T>& w, int64_t groups, int64_t panels, PackedInt8Weights* packed,
                     int32_t* lowest, int32_t* highest) {
  // int8 B is read as uint8 (b + 128) against zero points + 128: the same centred values.
  const int flip = std::is_signed_v<T> ? 0x80 : 0;
  const __m128i vflip = _mm_set1_epi8(static_cast<char>(flip)), zero = _mm_setzero_si128();
  __m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
  for (int64_t p = 0; p < panels; ++p) {
    // The 16 columns' zero points as int16 (every zero point lies in [-128, 255] + 128).
    int16_t zps[kP];
    for (int64_t j = 0; j < kP; ++j) zps[j] = static_cast<int16_t>(w.zero_points[w.zero_point_per_column ? p * kP + j : 0] + flip);
    const __m128i zp_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(zps));
    const __m128i zp_hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(zps + 8));
    __m128i sums[4] = {zero, zero, zero, zero};  // int32, columns 4i..4i+3
    int8_t* out = packed->data.data() + p * packed->k_groups * kGroupBytes;
    for (int64_t g = 0; g < groups; ++g, out += kGroupBytes) {
      __m128i rows[4], group_lo = zero, group_hi = zero;
      for (int t = 0; t < 4; ++t) {
        const T* src = w.b + (4 * g + t) * w.stride_k + p * kP;
        const __m128i raw = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), vflip);
        const __m128i v_lo = _mm_sub_epi16(_mm_unpacklo_epi8(raw, zero), zp_lo);  // columns 0-7
        const __m128i v_hi = _mm_sub_epi16(_mm_unpackhi_epi8(raw, zero), zp_hi);  // columns 8-15
        lo = _mm_min_epi16(lo, _mm_min_epi16(v_lo, v_hi));
        hi = _mm_max_epi16(hi, _mm_max_epi16(v_lo, v_hi));
        group_lo = _mm_add_epi16(group_lo, v_lo);  // |sum of 4| <= 4 * 255: no int16 overflow
        group_hi = _mm_add_epi16(group_hi, v_hi);
        rows[t] = _mm_packs_epi16(v_lo, v_hi);  // exact when the block fits; else nullopt below
      }
      // Sign-extend the group sums to int32 (unpack with itself, shift right 16).
      sums[0] = _mm_add_epi32(sums[0], _mm_srai_epi32(_mm_unpacklo_epi16(group_lo, group_lo), 16));
      sums[1] = _mm_add_epi32(sums[1], _mm_srai_epi32(_mm_unpackhi_epi16(group_lo, group_lo), 16));
      sums[2] = _mm_add_epi32(sums[2], _mm_srai_epi32(_mm_unpacklo_epi16(group_hi, group_hi), 16));
      sums[3] = _mm_add_epi32(sums[3], _mm_srai_epi32(_mm_unpackhi_epi16(group_hi, group_hi), 16));
      // Interleave: byte 4j + t of the group is row t's column j.
      const __m128i r01_lo = _mm_unpacklo_epi8(rows[0], rows[1]), r01_hi = _mm_unpackhi_epi8(rows[0], rows[1]);
      const __m128i r23_lo = _mm_unpacklo_epi8(rows[2], rows[3]), r23_hi = _mm_unpackhi_epi8(rows[2], rows[3]);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_unpacklo_epi16(r01_lo, r23_lo));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm_unpackhi_epi16(r01_lo, r23_lo));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32), _mm_unpacklo_epi16(r01_hi, r23_hi));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 48), _mm_unpackhi_epi16(r01_hi, r23_hi));
    }
    for (int i = 0; i < 4; ++i) {
      int32_t lane[4];
      _mm_storeu_si128(reinterpret_cast<__m128i*>(lane), sums[i]);
      for (int l = 0; l < 4; ++l) packed->col_sums[p * kP + 4 * i + l] += lane[l];
    }
  }
  int16_t lanes[8];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), lo);
  for (int16_t v : lanes) *lowest = std::min<int32_t>(*lowest, v);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), hi);
  for (int16_t v : lanes) *highest = std::max<int32_t>(*highest, v);
}

}  // namespace

template <typename T>
std::optional<PackedInt8Weights> PackCenteredInt8Weights(const CenteredWeights<T>& w, int64_t* max_abs) {
  const int64_t k = w.k, n = w.n;
  PackedInt8Weights packed = ZeroPacked(k, n);
  int32_t lowest = 0, highest = 0;
  const int64_t block_groups = w.stride_n == 1 ? k / 4 : 0, block_panels = w.stride_n == 1 ? n / kP : 0;
  if (block_groups > 0 && block_panels > 0) PackWholeBlocks(w, block_groups, block_panels, &packed, &lowest, &highest);
  // The rest (or all of a B with stride_n != 1) value by value: the columns right of the
  // blocks in their rows, then every column of the rows below them.
  for (int64_t kk = 0; kk < k; ++kk) {
    const T* row = w.b + kk * w.stride_k;
    int8_t* group = packed.data.data() + (kk / 4) * kGroupBytes + kk % 4;
    for (int64_t j = kk < 4 * block_groups ? block_panels * kP : 0; j < n; ++j) {
      const int32_t v = static_cast<int32_t>(row[j * w.stride_n]) - w.zero_points[w.zero_point_per_column ? j : 0];
      lowest = std::min(lowest, v);
      highest = std::max(highest, v);
      group[(j / kP) * packed.k_groups * kGroupBytes + (j % kP) * 4] = static_cast<int8_t>(v);
      packed.col_sums[j] += v;
    }
  }
  *max_abs = std::max(-int64_t{lowest}, int64_t{highest});
  if (lowest < -128 || highest > 127) return std::nullopt;
  packed.fits_maddubs = lowest >= -kInt8GemmMaddubsMaxAbsWeight && highest <= kInt8GemmMaddubsMaxAbsWeight;
  if (w.with_wide) packed.wide.assign(packed.data.begin(), packed.data.end());
  return packed;
}

template std::optional<PackedInt8Weights> PackCenteredInt8Weights(const CenteredWeights<uint8_t>&, int64_t*);
template std::optional<PackedInt8Weights> PackCenteredInt8Weights(const CenteredWeights<int8_t>&, int64_t*);

PackedInt8Weights PackInt8Weights(const int8_t* b, int64_t k, int64_t n, int64_t stride_k, int64_t stride_n) {
  static const int32_t kNoZeroPoint = 0;
  CenteredWeights<int8_t> w;
  w.b = b;
  w.k = k;
  w.n = n;
  w.stride_k = stride_k;
  w.stride_n = stride_n;
  w.zero_points = &kNoZeroPoint;
  int64_t max_abs = 0;
  return *PackCenteredInt8Weights(w, &max_abs);  // int8 values less 0 always fit
}

bool Int8GemmIsaAvailable(Int8GemmIsa isa) {
  switch (isa) {
    case Int8GemmIsa::kAvx512Vnni:
      return IsaAllowed(Isa::kAvx512Vnni);
    case Int8GemmIsa::kAvxVnni:
      return VnniAllowed() && CpuHasAvxVnni();
    case Int8GemmIsa::kAvx2:
      return IsaAllowed(Isa::kAvx2);
    case Int8GemmIsa::kScalar:
      return true;
  }
  return false;
}

Int8GemmIsa BestInt8GemmIsa() {
  for (Int8GemmIsa isa : {Int8GemmIsa::kAvx512Vnni, Int8GemmIsa::kAvxVnni, Int8GemmIsa::kAvx2}) {
    if (Int8GemmIsaAvailable(isa)) return isa;
  }
  return Int8GemmIsa::kScalar;
}

const char* Int8GemmIsaName(Int8GemmIsa isa) {
  switch (isa) {
    case Int8GemmIsa::kAvx512Vnni: return "avx512vnni";
    case Int8GemmIsa::kAvxVnni: return "avxvnni";
    case Int8GemmIsa::kAvx2: return "avx2";
    case Int8GemmIsa::kScalar: return "scalar";
  }
  return "?";
}

void Int8Gemm(const Int8GemmArgs& args, const PackedInt8Weights& b) {
  if (args.m <= 0 || b.n <= 0) return;
  const int threads = args.pool == nullptr ? 1 : args.pool->num_threads();
  const int64_t tasks = (args.m + kRowsPerTask - 1) / kRowsPerTask;
  if (threads <= 1 || tasks < 2 || args.m * b.n * std::max<int64_t>(b.k, 1) < kParallelMinMacs) {
    RunRows(args, b, 0, args.m);
    return;
  }
  args.pool->ParallelFor(tasks, 1, [&](int64_t begin, int64_t end) {
    RunRows(args, b, begin * kRowsPerTask, std::min(args.m, end * kRowsPerTask));
  });
}

}  // namespace qfuse::runtime::kernels::quant
