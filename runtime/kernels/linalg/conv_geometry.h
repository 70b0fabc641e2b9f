// Conv / ConvTranspose attributes (parsed once) and the geometry they resolve to for
// given input and weight shapes, normalised to three spatial dims (leading dims of
// size 1 for 1-D and 2-D), plus the im2col / col2im transforms over that geometry.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_CONV_GEOMETRY_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_CONV_GEOMETRY_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"

namespace qfuse::runtime::kernels::linalg {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct ConvAttrs {
  // Empty vectors mean "absent" (defaults depend on the spatial rank, known at Run).
  std::vector<int64_t> kernel_shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;            // [begin..., end...]
  std::vector<int64_t> output_padding;  // ConvTranspose only
  std::vector<int64_t> output_shape;    // ConvTranspose only (spatial dims)
  int64_t group = 1;
  AutoPad auto_pad = AutoPad::kNotSet;
};

// Reads and validates the attributes of a Conv (transpose = false) or ConvTranspose.
absl::StatusOr<ConvAttrs> ParseConvAttrs(const ir::Node& node, bool transpose);

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
// Direct per-channel convolution: out[col] = bias + sum_tap w[tap] * image[pos(col, tap)]
// for one channel (depthwise convolution); AVX-512 or AVX2/FMA when the CPU has it.
void DepthwiseChannel(const ConvGeometry& g, const float* image, const float* w, float bias, float* out);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_CONV_GEOMETRY_H_
