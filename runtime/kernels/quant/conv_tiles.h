// Integer Conv as tiles of an im2row GEMM: weights [Cout, Cin/group, k...] prepared once
// per group, and a parallel driver that gathers blocks of output pixels into int8/uint8
// rows (padding filled with the input zero point, so it contributes nothing) and
// multiplies them by the group's weights. Shared by QLinearConv / ConvInteger and the
// fused QLinearUnit, which differ only in how they store the int32 accumulators.
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_CONV_TILES_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_CONV_TILES_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "ir/tensor.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/quant/quant_util.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {

// Output pixels per tile (rows of one GEMM).
inline constexpr int64_t kConvTilePixels = 64;

// One PreparedWeights per group g of an INT8 / UINT8 conv weight w [Cout, Cin/group, k...]:
// B_g[k][oc] = w[g * Cout/group + oc][k] - w_zps[g * Cout/group + oc] (or w_zps[0] when
// there is one zero point). Cout must be a multiple of `group`.
std::vector<PreparedWeights> PrepareConvGroups(const Tensor& w, int64_t group, absl::Span<const int32_t> w_zps);

struct ConvTilesArgs {
  const linalg::ConvGeometry* geometry = nullptr;
  const uint8_t* x = nullptr;  // [batch, cin, image...] INT8 or UINT8 bytes
  bool x_signed = false;       // INT8 (else UINT8)
  int32_t x_zero_point = 0;
  int64_t batch = 0;
  int64_t cin = 0;
  int64_t group = 1;
  absl::Span<const PreparedWeights> weights;  // per group, as from PrepareConvGroups
  const ThreadPool* pool = nullptr;
};

// For every (image n, group gi, output pixels [p0, p1)) tile, in parallel: computes
// acc[(p - p0) * cout_g + oc] = sum_k (x - x_zero_point) * B_gi[k][oc] in int32 (no
// overflow check: the caller bounds the accumulator) and calls tile(n, gi, p0, p1, acc)
// on the same thread. Tiles hold at most kConvTilePixels pixels.
using ConvTileFn = absl::FunctionRef<void(int64_t n, int64_t gi, int64_t p0, int64_t p1, const int32_t* acc)>;
void ForEachConvTile(const ConvTilesArgs& args, ConvTileFn tile);

}  // namespace qfuse::runtime::kernels::quant

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_CONV_TILES_H_
