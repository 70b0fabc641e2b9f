// Transposes of byte matrices, the int8 layout changes between plain NCHW and channels-last
// NHWC: each image is a [rows][cols] matrix ([H*W][C] one way, [C][H*W] the other). 16 x 16
// tiles go through SSE2 byte / word / dword / qword unpacks (baseline x86-64, so every ISA cap
// runs the same code); the ragged edges are copied byte by byte.
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_BYTE_TRANSPOSE_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_BYTE_TRANSPOSE_H_

#include <cstdint>

#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {

// Whether the 16 x 16 tiles cover a rows x cols matrix well: both sides at least 16. Below it
// TransposeBytes copies byte by byte, and callers keep their own path (oneDNN's reorder took
// 0.42-0.56x the tiles' time on a 3-channel image, tests/runtime/onednn:int8_reorder_benchmark).
inline bool TileTransposeFits(int64_t rows, int64_t cols) { return rows >= 16 && cols >= 16; }

// dst[m][c][r] = src[m][r][c] for `matrices` matrices of rows x cols bytes each (src and dst
// must not overlap). Large inputs are split over the pool's threads in bands of 16 rows.
void TransposeBytes(const ThreadPool& pool, const uint8_t* src, int64_t matrices, int64_t rows, int64_t cols,
                    uint8_t* dst);

}  // namespace qfuse::runtime::kernels::quant

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_BYTE_TRANSPOSE_H_
