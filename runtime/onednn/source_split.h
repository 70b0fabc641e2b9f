// Exact 8-bit int8 convolutions on x86 CPUs without VNNI: the uint8 source x is split as
// x = o + lo + d with lo = clamp(x - o, 0, 127). oneDNN convolves lo (a 7-bit source, whose
// vpmaddubsw pair sums |lo0 * w0 + lo1 * w1| <= 127 * 128 * 2 = 32512 never saturate int16, for
// every int8 weight) with the source zero point zp - o; the few d != 0 (values outside the window
// [o, o + 127]) are added back here, exactly, as d * w per tap. The sum is
// sum (lo + d - (zp - o)) * w = sum (x - zp) * w, taken modulo 2^32: exact whenever the true
// accumulator fits int32 (callers check that, numerics::CheckAccumulatorFitsInt32).
#ifndef QFUSE_RUNTIME_ONEDNN_SOURCE_SPLIT_H_
#define QFUSE_RUNTIME_ONEDNN_SOURCE_SPLIT_H_

#include <cstdint>
#include <vector>

#include "ir/tensor.h"
#include "runtime/kernels/linalg/conv_geometry.h"

namespace qfuse::runtime::onednn {

// The window's start o for a source whose zero point is `zero_point` in the uint8 domain (after
// the int8 flip): the window [o, o + 127] sits on the zero point's side where values gather
// (post-ReLU zero point 0: [0, 127]; symmetric zero point 128: [64, 191]).
int32_t SplitSourceOffset(int32_t zero_point);

// Conv weights [Cout, Cin/group, KH, KW] (INT8, zero point 0) as the outlier pass reads them:
// w[(tap * Cin + c) * cout_g + j] = weight of output channel group(c) * cout_g + j, input
// channel c: the row an outlier of channel c at that tap scales.
struct SplitSourceWeights {
  int64_t cin = 0, cout = 0, cin_g = 0, cout_g = 0, taps = 0;
  std::vector<int8_t> w;
};
SplitSourceWeights PrepareSplitSourceWeights(const ir::Tensor& weights, int64_t group);

// The values outside the window: per source pixel (over [N, H, W]) that has any, its entries.
struct SourceOutliers {
  struct Entry {
    int32_t channel;
    uint32_t delta;  // d in [-128, 128] as a 16-bit pattern zero-extended to 32 bits
  };
  struct Pixel {
    int64_t pixel;
    int32_t chunk, begin, count;  // entries [begin, begin + count) of chunks[chunk]
  };
  std::vector<std::vector<Entry>> chunks;  // the entries of each parallel chunk, in pixel order
  std::vector<Pixel> pixels;               // ascending
  int64_t total = 0;                       // entries in all
  std::vector<std::vector<Pixel>> chunk_pixels;  // SplitSource's per-chunk scratch
};

// Writes lo = clamp((x ^ flip) - offset, 0, 127) for `pixels` channels-last pixels of `channels`
// bytes and the outliers into *outliers, whose storage is reused from call to call (a hot
// path: one call per convolution). Parallel over pixels (OpenMP, oneDNN's threads).
void SplitSource(const uint8_t* x, uint8_t flip, int32_t offset, int64_t pixels, int64_t channels, uint8_t* lo,
                 SourceOutliers* outliers);

// Whether so many of `bytes` source bytes lie outside the window [offset, offset + 127] (after
// ^ flip) that qfuse's tiles are faster than the split source: more than 1 in 8 (first layers,
// whose inputs span the whole range), estimated on one run of 64 bytes in every 16384.
bool DenseSplitOutliers(const uint8_t* x, int64_t bytes, uint8_t flip, int32_t offset);

// Adds sum over taps and outliers of d * w to acc for output pixels [p0, p1) (over [N, OH, OW],
// channels-last, Cout int32 per pixel; acc points at pixel p0), modulo 2^32. g is 2-D.
void AddSourceOutliers(const kernels::linalg::ConvGeometry& g, const SourceOutliers& outliers,
                       const SplitSourceWeights& w, int64_t p0, int64_t p1, int32_t* acc);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_SOURCE_SPLIT_H_
