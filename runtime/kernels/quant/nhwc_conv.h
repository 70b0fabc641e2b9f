// Integer 2-D convolution on channels-last (NHWC) INT8/UINT8 activations: the exact int32
// accumulators sum (x - zp_x) * (w - zp_w) of tiles of output pixels, [pixel][Cout], handed
// to the caller (an output stage) while they are still in cache: no int32 tensor, no NCHW
// gathers. 1x1 stride-1 convolutions read the activation rows in place; others copy each
// tap's run of channels (im2row); depthwise convolutions vectorise over channels.
//
// Arithmetic (every path, every ISA: bit-identical, exact whenever the true accumulator fits
// in int32, which callers check with numerics::CheckAccumulatorFitsInt32):
//   GEMM path: quant::IntegerGemm (int8_gemm.h) on rows [tap][channel of the group], padding
//   taps filled with zp_x, so they contribute 0.
//   Depthwise: acc[c] = sum over all taps of x_t[c] * w_t[c] - zp_x * sum_t w_t[c] taken
//   modulo 2^32, with x_t = zp_x for taps in the padding (w_t centred on its zero point, in
//   [-255, 255]); AVX2 multiplies 16-bit halves with vpmaddwd, two taps per lane for blocks
//   of 16 channels (x_t * w_t + x_t+1 * w_t+1, at most 2 * 255 * 255: no saturation), one
//   tap per lane otherwise (x * w + 0 * 0). 3x3 kernels pair each input column's rows 0 and 1
//   once for the four output pixels of a row that read it. With AVX-VNNI or AVX-512 VNNI,
//   vpdpwssd replaces vpmaddwd + vpaddd (the same wrapping sum); AVX-512 VNNI also runs the
//   3x3 rows on 512-bit registers.
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_NHWC_CONV_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_NHWC_CONV_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "ir/tensor.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/quant/quant_util.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::kernels::quant {

// Largest number of output pixels per tile (pixels are numbered over [N, OH, OW]).
inline constexpr int64_t kNhwcMaxTilePixels = 64;

// Weights [Cout, Cin/group, KH, KW] prepared once.
struct NhwcConvWeights {
  int64_t group = 1;
  int64_t cin_g = 0;
  int64_t cout = 0;
  int64_t taps = 1;        // KH * KW
  bool depthwise = false;  // Cin/group == 1 and Cout == group
  int64_t max_abs = 0;     // max |w - zp_w|
  // Not depthwise, per group: B[tap * cin_g + ic][oc] = w[g * Cout/group + oc][ic][tap] - zp.
  std::vector<PreparedWeights> gemm;
  // Depthwise: [tap][c] centred weights (in [-255, 255]) as 16-bit patterns zero-extended
  // to 32 bits (the high half 0 for vpmaddwd), and their sum over taps per channel.
  std::vector<int32_t> dw;
  std::vector<int32_t> dw_sums;
  // Depthwise, for AVX2's blocks of 16 channels: taps in pairs (t, t + 1), each int32 lane
  // holding the two 16-bit weights of one channel (w_t low, w_t+1 high; 0 past the last
  // tap), so one vpmaddwd adds x_t * w_t + x_t+1 * w_t+1. Per pair and block, two runs of 8
  // lanes in the order vpunpck{l,h}wd leaves the channels: c0-3, c8-11, then c4-7, c12-15.
  std::vector<int32_t> dw_pairs;
  // Depthwise 3x3 only: [kx][c] the weights of taps (0, kx) and (1, kx) of channel c as one
  // int32 lane (w_0kx low, w_1kx high), in channel order, for Depthwise3x3RowAvx2's vertical
  // pairs. Empty otherwise.
  std::vector<int32_t> dw_columns;
};

// w: INT8 or UINT8 of rank 4; w_zps: one value or one per output channel. Cout must be a
// multiple of `group`.
NhwcConvWeights PrepareNhwcConvWeights(const ir::Tensor& w, int64_t group, absl::Span<const int32_t> w_zps);

struct NhwcConvArgs {
  const linalg::ConvGeometry* geometry = nullptr;  // 2-D: image[0] == kernel[0] == col[0] == 1
  const uint8_t* x = nullptr;                       // [batch, H, W, Cin] INT8 or UINT8 bytes
  bool x_signed = false;
  int32_t x_zero_point = 0;
  int64_t batch = 0;
  const ThreadPool* pool = nullptr;
};

// For every tile of output pixels [p0, p1) (at most kNhwcMaxTilePixels), in parallel:
// acc[(p - p0) * Cout + oc] = the accumulator of pixel p, channel oc; calls tile(p0, p1, acc)
// on the same thread.
using NhwcTileFn = absl::FunctionRef<void(int64_t p0, int64_t p1, const int32_t* acc)>;
void ForEachNhwcConvTile(const NhwcConvArgs& args, const NhwcConvWeights& w, NhwcTileFn tile);

// How the depthwise tiles multiply 16-bit pairs under the current ISA cap: "vpmaddwd",
// "vpdpwssd (VEX)" (AVX-VNNI) or "vpdpwssd (EVEX)" (AVX-512 VNNI), for tests and logs.
const char* DepthwisePairDotName();

}  // namespace qfuse::runtime::kernels::quant

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_NHWC_CONV_H_
