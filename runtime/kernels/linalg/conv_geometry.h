// The geometry a Conv / ConvTranspose resolves to for given input and weight shapes (output
// size, padding after auto_pad), normalised to three spatial dims (leading dims of size 1 for
// 1-D and 2-D), and the index ranges the im2col and depthwise loops walk.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_CONV_GEOMETRY_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_CONV_GEOMETRY_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/kernels/linalg/conv_attrs.h"

namespace qfuse::runtime::kernels::linalg {

constexpr int kMaxSpatial = 3;

// "Image" is the large side (Conv input, ConvTranspose output); "col" is the grid of
// kernel positions (Conv output, ConvTranspose input). Image position of col index
// o and kernel tap k along a dim: o * stride - pad_begin + k * dilation.
struct ConvGeometry {
  int64_t spatial_rank = 0;
  std::array<int64_t, kMaxSpatial> image{1, 1, 1};
  std::array<int64_t, kMaxSpatial> col{1, 1, 1};
  std::array<int64_t, kMaxSpatial> kernel{1, 1, 1};
  std::array<int64_t, kMaxSpatial> stride{1, 1, 1};
  std::array<int64_t, kMaxSpatial> dilation{1, 1, 1};
  std::array<int64_t, kMaxSpatial> pad_begin{0, 0, 0};

  int64_t image_size() const { return image[0] * image[1] * image[2]; }
  int64_t col_size() const { return col[0] * col[1] * col[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  // 1x1 kernel, stride 1, no padding: the image already is the column matrix.
  bool IsPointwise() const;
};

// Geometry of a Conv with input spatial dims `in` and weight spatial dims `kernel`
// (the kernel_shape attribute must agree with the weights when present).
absl::StatusOr<ConvGeometry> ResolveConv(const ConvAttrs& attrs, absl::Span<const int64_t> in,
                                         absl::Span<const int64_t> kernel);
// [batch, channels, spatial...] of the col side (Conv output) or, with image_side,
// the image side (ConvTranspose output), at g's spatial rank.
std::vector<int64_t> ConvOutputDims(int64_t batch, int64_t channels, const ConvGeometry& g, bool image_side);
// Geometry of a ConvTranspose; `image` becomes the output spatial dims.
absl::StatusOr<ConvGeometry> ResolveConvTranspose(const ConvAttrs& attrs, absl::Span<const int64_t> in,
                                                  absl::Span<const int64_t> kernel);

// Range [lo, hi) of col indices o with 0 <= o * stride + offset < extent.
inline void ValidRange(int64_t offset, int64_t stride, int64_t extent, int64_t count, int64_t* lo, int64_t* hi) {
  int64_t l = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t h = extent - offset <= 0 ? 0 : (extent - offset - 1) / stride + 1;
  l = std::min(l, count);
  h = std::min(h, count);
  *lo = l;
  *hi = std::max(h, l);
}

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_CONV_GEOMETRY_H_
