// The im2col transform of a convolution and its adjoint col2im, over a ConvGeometry: the
// column matrix the GEMM paths of Conv multiply, and the scatter ConvTranspose adds back.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_IM2COL_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_IM2COL_H_

#include <cstdint>

#include "runtime/kernels/linalg/conv_geometry.h"

namespace qfuse::runtime::kernels::linalg {

// col[c * kernel_size + tap][col_pos] = image[c][pos(col_pos, tap)] or 0 in padding,
// for `channels` consecutive channels of one image.
void Im2Col(const ConvGeometry& g, int64_t channels, const float* image, float* col);
// The same for the output rows [row_begin, row_end) only (a row is one (z, y) pair,
// numbered z * col[1] + y, holding col[2] positions): col is then
// [channels * kernel_size][(row_end - row_begin) * col[2]].
void Im2ColRows(const ConvGeometry& g, int64_t channels, const float* image, int64_t row_begin, int64_t row_end,
                float* col);
// The adjoint: image[c][pos(col_pos, tap)] += col[c * kernel_size + tap][col_pos].
void Col2ImAdd(const ConvGeometry& g, int64_t channels, const float* col, float* image);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_IM2COL_H_
