#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/cpu_isa.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/status_macros.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

absl::Status CheckPositive(const std::vector<int64_t>& values, const std::string& name) {
  for (int64_t v : values) {
    if (v < 1) return absl::InvalidArgumentError(absl::StrCat(name, " must be positive, got [", absl::StrJoin(values, ","), "]"));
  }
  return absl::OkStatus();
}

// `values` if it has `rank` entries, `fallback` repeated when it is empty.
absl::StatusOr<std::vector<int64_t>> PerDim(const std::vector<int64_t>& values, size_t rank, int64_t fallback,
                                            const std::string& name) {
  if (values.empty()) return std::vector<int64_t>(rank, fallback);
  if (values.size() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " has ", values.size(), " entries, expected ", rank, " for the spatial rank"));
  }
  return values;
}

// Range [lo, hi) of col indices o with 0 <= o * stride + offset < extent.
inline void ValidRange(int64_t offset, int64_t stride, int64_t extent, int64_t count, int64_t* lo, int64_t* hi) {
  int64_t l = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t h = extent - offset <= 0 ? 0 : (extent - offset - 1) / stride + 1;
  l = std::min(l, count);
  h = std::min(h, count);
  *lo = l;
  *hi = std::max(h, l);
}

// Fills the shared geometry fields, right-aligned into the 3-D arrays.
void Place(size_t rank, size_t i, int64_t image, int64_t col, int64_t kernel, int64_t stride, int64_t dilation,
           int64_t pad_begin, ConvGeometry* g) {
  const size_t d = kMaxSpatial - rank + i;
  g->image[d] = image;
  g->col[d] = col;
  g->kernel[d] = kernel;
  g->stride[d] = stride;
  g->dilation[d] = dilation;
  g->pad_begin[d] = pad_begin;
}

absl::Status CheckRank(size_t rank, absl::Span<const int64_t> kernel, const ConvAttrs& attrs) {
  if (rank < 1 || rank > kMaxSpatial) {
    return absl::UnimplementedError(absl::StrCat("spatial rank ", rank, " is not supported (1 to 3)"));
  }
  if (kernel.size() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights have ", kernel.size(), " spatial dims, input has ", rank));
  }
  if (!attrs.kernel_shape.empty() &&
      !std::equal(attrs.kernel_shape.begin(), attrs.kernel_shape.end(), kernel.begin(), kernel.end())) {
    return absl::InvalidArgumentError(absl::StrCat("kernel_shape [", absl::StrJoin(attrs.kernel_shape, ","),
                                                   "] does not match the weights ", ir::DimsToString(kernel)));
  }
  for (int64_t k : kernel) {
    if (k < 1) return absl::InvalidArgumentError(absl::StrCat("empty kernel ", ir::DimsToString(kernel)));
  }
  return absl::OkStatus();
}

// The per-dim attributes shared by Conv and ConvTranspose, checked against the spatial
// rank of `in` and the weights' spatial dims `kernel`, with their defaults filled in.
struct PerDimAttrs {
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // [begin..., end...]
};

absl::StatusOr<PerDimAttrs> ResolvePerDim(const ConvAttrs& attrs, absl::Span<const int64_t> in,
                                          absl::Span<const int64_t> kernel) {
  const size_t rank = in.size();
  QFUSE_RETURN_IF_ERROR(CheckRank(rank, kernel, attrs));
  PerDimAttrs d;
  QFUSE_ASSIGN_OR_RETURN(d.strides, PerDim(attrs.strides, rank, 1, "strides"));
  QFUSE_ASSIGN_OR_RETURN(d.dilations, PerDim(attrs.dilations, rank, 1, "dilations"));
  QFUSE_ASSIGN_OR_RETURN(d.pads, PerDim(attrs.pads, 2 * rank, 0, "pads"));
  return d;
}

}  // namespace

absl::StatusOr<ConvAttrs> ParseConvAttrs(const ir::Node& node, bool transpose) {
  const ir::AttributeMap& a = node.attrs();
  ConvAttrs attrs;
  QFUSE_ASSIGN_OR_RETURN(attrs.kernel_shape, a.GetInts("kernel_shape", {}));
  QFUSE_ASSIGN_OR_RETURN(attrs.strides, a.GetInts("strides", {}));
  QFUSE_ASSIGN_OR_RETURN(attrs.dilations, a.GetInts("dilations", {}));
  QFUSE_ASSIGN_OR_RETURN(attrs.pads, a.GetInts("pads", {}));
  QFUSE_ASSIGN_OR_RETURN(attrs.group, a.GetInt("group", 1));
  QFUSE_ASSIGN_OR_RETURN(std::string auto_pad, a.GetString("auto_pad", "NOTSET"));
  if (transpose) {
    QFUSE_ASSIGN_OR_RETURN(attrs.output_padding, a.GetInts("output_padding", {}));
    QFUSE_ASSIGN_OR_RETURN(attrs.output_shape, a.GetInts("output_shape", {}));
  }
  if (auto_pad == "NOTSET") {
    attrs.auto_pad = AutoPad::kNotSet;
  } else if (auto_pad == "SAME_UPPER") {
    attrs.auto_pad = AutoPad::kSameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    attrs.auto_pad = AutoPad::kSameLower;
  } else if (auto_pad == "VALID") {
    attrs.auto_pad = AutoPad::kValid;
  } else {
    return absl::UnimplementedError(absl::StrCat("auto_pad '", auto_pad, "' is not supported"));
  }
  if (attrs.group < 1) return absl::InvalidArgumentError(absl::StrCat("group must be positive, got ", attrs.group));
  QFUSE_RETURN_IF_ERROR(CheckPositive(attrs.strides, "strides"));
  QFUSE_RETURN_IF_ERROR(CheckPositive(attrs.dilations, "dilations"));
  QFUSE_RETURN_IF_ERROR(CheckPositive(attrs.kernel_shape, "kernel_shape"));
  for (int64_t p : attrs.pads) {
    if (p < 0) return absl::UnimplementedError(absl::StrCat("negative pads [", absl::StrJoin(attrs.pads, ","), "]"));
  }
  if (attrs.pads.size() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("pads has an odd number of entries: ", attrs.pads.size()));
  }
  for (int64_t p : attrs.output_padding) {
    if (p < 0) return absl::InvalidArgumentError("output_padding must be non-negative");
  }
  // Bounded attributes keep every geometry sum and product (extent, padded size,
  // transposed output) far inside int64 for any input that fits in memory.
  constexpr int64_t kMaxAttribute = int64_t{1} << 31;
  for (const auto* list : {&attrs.kernel_shape, &attrs.strides, &attrs.dilations, &attrs.pads,
                           &attrs.output_padding, &attrs.output_shape}) {
    for (int64_t v : *list) {
      if (v > kMaxAttribute || v < -kMaxAttribute) {
        return absl::InvalidArgumentError(absl::StrCat("attribute value ", v, " is implausibly large (> 2^31)"));
      }
    }
  }
  return attrs;
}

bool ConvGeometry::IsPointwise() const {
  for (int i = 0; i < kMaxSpatial; ++i) {
    if (kernel[i] != 1 || stride[i] != 1 || pad_begin[i] != 0 || image[i] != col[i]) return false;
  }
  return true;
}

std::vector<int64_t> ConvOutputDims(int64_t batch, int64_t channels, const ConvGeometry& g, bool image_side) {
  std::vector<int64_t> dims = {batch, channels};
  const auto& spatial = image_side ? g.image : g.col;
  for (int64_t i = kMaxSpatial - g.spatial_rank; i < kMaxSpatial; ++i) dims.push_back(spatial[i]);
  return dims;
}

absl::StatusOr<ConvGeometry> ResolveConv(const ConvAttrs& attrs, absl::Span<const int64_t> in,
                                         absl::Span<const int64_t> kernel) {
  const size_t rank = in.size();
  QFUSE_ASSIGN_OR_RETURN(const PerDimAttrs d, ResolvePerDim(attrs, in, kernel));
  ConvGeometry g;
  g.spatial_rank = static_cast<int64_t>(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t s = d.strides[i];
    const int64_t extent = (kernel[i] - 1) * d.dilations[i] + 1;
    int64_t begin = d.pads[i], end = d.pads[rank + i];
    int64_t out = 0;
    switch (attrs.auto_pad) {
      case AutoPad::kNotSet:
      case AutoPad::kValid:
        if (attrs.auto_pad == AutoPad::kValid) begin = end = 0;
        if (in[i] + begin + end < extent) {
          return absl::InvalidArgumentError(absl::StrCat("input spatial dims ", ir::DimsToString(in),
                                                         " are smaller than the dilated kernel"));
        }
        out = (in[i] + begin + end - extent) / s + 1;
        break;
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        out = (in[i] + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in[i]);
        begin = attrs.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
        break;
      }
    }
    Place(rank, i, in[i], out, kernel[i], s, d.dilations[i], begin, &g);
  }
  return g;
}

absl::StatusOr<ConvGeometry> ResolveConvTranspose(const ConvAttrs& attrs, absl::Span<const int64_t> in,
                                                  absl::Span<const int64_t> kernel) {
  const size_t rank = in.size();
  QFUSE_ASSIGN_OR_RETURN(const PerDimAttrs d, ResolvePerDim(attrs, in, kernel));
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> output_padding,
                         PerDim(attrs.output_padding, rank, 0, "output_padding"));
  std::vector<int64_t> output_shape = attrs.output_shape;
  if (output_shape.size() == rank + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != rank) {
    return absl::InvalidArgumentError(absl::StrCat("output_shape has ", attrs.output_shape.size(),
                                                   " entries, expected ", rank));
  }
  ConvGeometry g;
  g.spatial_rank = static_cast<int64_t>(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t s = d.strides[i];
    const int64_t extent = (kernel[i] - 1) * d.dilations[i] + 1;
    const int64_t natural = s * (in[i] - 1) + output_padding[i] + extent;
    int64_t begin = d.pads[i], end = d.pads[rank + i];
    int64_t out = 0;
    const bool same = attrs.auto_pad == AutoPad::kSameUpper || attrs.auto_pad == AutoPad::kSameLower;
    if (!output_shape.empty() || same) {
      out = !output_shape.empty() ? output_shape[i] : in[i] * s;
      const int64_t total = std::max<int64_t>(0, natural - out);
      // ONNX: SAME_UPPER puts the odd unit of padding at the end, otherwise at the start.
      begin = attrs.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
    } else {
      if (attrs.auto_pad == AutoPad::kValid) begin = end = 0;
      out = natural - begin - end;
    }
    if (out < 1) {
      return absl::InvalidArgumentError(absl::StrCat("ConvTranspose output spatial dim ", i, " would be ", out));
    }
    Place(rank, i, out, in[i], kernel[i], s, d.dilations[i], begin, &g);
  }
  return g;
}

namespace {

// The image rows output row (z, y) of a depthwise convolution reads, with the weight taps
// for each; rows outside the image (padding) are skipped. Returns how many were written.
inline int64_t DepthwiseRows(const ConvGeometry& g, int64_t z, int64_t y, const float* image, int64_t plane,
                             int64_t width, const float* w, int64_t kw_count, const float** rows,
                             const float** row_taps) {
  int64_t num_rows = 0;
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
    if (iz < 0 || iz >= g.image[0]) continue;
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
      if (iy < 0 || iy >= g.image[1]) continue;
      rows[num_rows] = image + iz * plane + iy * width;
      row_taps[num_rows++] = w + (kd * g.kernel[1] + kh) * kw_count;
    }
  }
  return num_rows;
}

// Lanes [0, n) of a 16-lane mask (n clamped to [0, 16]).
__attribute__((always_inline)) inline uint32_t LowLanes(int64_t n) {
  return n <= 0 ? 0u : (n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

// dst[x] = src[x + off] for x in [lo, hi), 0 elsewhere in [0, width): whole rows in
// a few masked 16-lane moves (masked-off lanes are never read, so no out-of-row access).
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma"))) inline void CopyRowAvx512(
    float* dst, const float* src, int64_t off, int64_t lo, int64_t hi, int64_t width) {
  for (int64_t x = 0; x < width; x += 16) {
    const __mmask16 load = static_cast<__mmask16>(LowLanes(hi - x) & ~LowLanes(lo - x));
    const __m512 v = _mm512_maskz_loadu_ps(load, reinterpret_cast<const float*>(
                                                     reinterpret_cast<uintptr_t>(src) + sizeof(float) * (x + off)));
    _mm512_mask_storeu_ps(dst + x, static_cast<__mmask16>(LowLanes(width - x)), v);
  }
}

// The Im2Col loop, inlined into a baseline and an AVX-512 variant (masked row copies
// instead of short memcpy/memset calls for unit horizontal stride).
template <bool kAvx512>
__attribute__((always_inline)) inline void Im2ColBody(const ConvGeometry& g, int64_t channels, const float* image,
                                                      int64_t row_begin, int64_t row_end, float* col) {
  const int64_t col_size = (row_end - row_begin) * g.col[2];
  const int64_t plane = g.image[1] * g.image[2];
  float* dst_row = col;
  for (int64_t c = 0; c < channels; ++c) {
    const float* chan = image + c * g.image_size();
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, dst_row += col_size) {
          const int64_t off_w = kw * g.dilation[2] - g.pad_begin[2];
          int64_t lo, hi;
          ValidRange(off_w, g.stride[2], g.image[2], g.col[2], &lo, &hi);
          float* dst = dst_row;
          for (int64_t row = row_begin; row < row_end; ++row, dst += g.col[2]) {
            const int64_t z = row / g.col[1], y = row % g.col[1];
            const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
            const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
            if (iz < 0 || iz >= g.image[0] || iy < 0 || iy >= g.image[1]) {
              std::memset(dst, 0, sizeof(float) * g.col[2]);
              continue;
            }
            const float* src = chan + iz * plane + iy * g.image[2];
            if constexpr (kAvx512) {
              if (g.stride[2] == 1) {
                CopyRowAvx512(dst, src, off_w, lo, hi, g.col[2]);
                continue;
              }
            }
            if (lo > 0) std::memset(dst, 0, sizeof(float) * lo);
            if (g.stride[2] == 1) {
              std::memcpy(dst + lo, src + lo + off_w, sizeof(float) * (hi - lo));
            } else {
              const int64_t s = g.stride[2];
              for (int64_t x = lo; x < hi; ++x) dst[x] = src[x * s + off_w];
            }
            if (hi < g.col[2]) std::memset(dst + hi, 0, sizeof(float) * (g.col[2] - hi));
          }
        }
      }
    }
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma"))) void Im2ColAvx512(const ConvGeometry& g,
                                                                                   int64_t channels,
                                                                                   const float* image,
                                                                                   int64_t row_begin,
                                                                                   int64_t row_end, float* col) {
  Im2ColBody<true>(g, channels, image, row_begin, row_end, col);
}

void Im2ColBaseline(const ConvGeometry& g, int64_t channels, const float* image, int64_t row_begin,
                    int64_t row_end, float* col) {
  Im2ColBody<false>(g, channels, image, row_begin, row_end, col);
}

}  // namespace

void Im2ColRows(const ConvGeometry& g, int64_t channels, const float* image, int64_t row_begin, int64_t row_end,
                float* col) {
  if (IsaAllowed(Isa::kAvx512)) {
    Im2ColAvx512(g, channels, image, row_begin, row_end, col);
  } else {
    Im2ColBaseline(g, channels, image, row_begin, row_end, col);
  }
}

void Im2Col(const ConvGeometry& g, int64_t channels, const float* image, float* col) {
  Im2ColRows(g, channels, image, 0, g.col[0] * g.col[1], col);
}

void Col2ImAdd(const ConvGeometry& g, int64_t channels, const float* col, float* image) {
  const int64_t col_size = g.col_size();
  const int64_t plane = g.image[1] * g.image[2];
  const float* src_row = col;
  for (int64_t c = 0; c < channels; ++c) {
    float* chan = image + c * g.image_size();
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, src_row += col_size) {
          const int64_t off_w = kw * g.dilation[2] - g.pad_begin[2];
          int64_t lo, hi;
          ValidRange(off_w, g.stride[2], g.image[2], g.col[2], &lo, &hi);
          const float* src = src_row;
          for (int64_t z = 0; z < g.col[0]; ++z) {
            const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
            const bool z_ok = iz >= 0 && iz < g.image[0];
            for (int64_t y = 0; y < g.col[1]; ++y, src += g.col[2]) {
              const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
              if (!z_ok || iy < 0 || iy >= g.image[1]) continue;
              float* dst = chan + iz * plane + iy * g.image[2];
              const int64_t s = g.stride[2];
              for (int64_t x = lo; x < hi; ++x) dst[x * s + off_w] += src[x];
            }
          }
        }
      }
    }
  }
}

namespace {

// dst[x:x+kBlock] = bias + sum over rows and taps of w * row[x + off]: fixed-size
// inner loops the compiler turns into vector FMAs held in registers across all taps.
// Stores (never adds), so overlapping blocks are harmless.
template <int kBlock>
__attribute__((always_inline)) inline void DepthwiseBlock(const float* const* rows, const float* const* row_taps,
                                                          int64_t num_rows, const int64_t* off, int64_t kw_count,
                                                          int64_t x, float bias, float* dst) {
  // Two partial sums (alternate taps) halve the FMA dependency chains.
  float acc[kBlock], acc2[kBlock];
  for (int j = 0; j < kBlock; ++j) {
    acc[j] = bias;
    acc2[j] = 0.0f;
  }
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* taps = row_taps[r];
    const float* row = rows[r] + x;
    int64_t kw = 0;
    for (; kw + 2 <= kw_count; kw += 2) {
      const float w0 = taps[kw], w1 = taps[kw + 1];
      const float* s0 = row + off[kw];
      const float* s1 = row + off[kw + 1];
      for (int j = 0; j < kBlock; ++j) {
        acc[j] += w0 * s0[j];
        acc2[j] += w1 * s1[j];
      }
    }
    if (kw < kw_count) {
      const float w0 = taps[kw];
      const float* s0 = row + off[kw];
      for (int j = 0; j < kBlock; ++j) acc2[j] += w0 * s0[j];
    }
  }
  for (int j = 0; j < kBlock; ++j) dst[x + j] = acc[j] + acc2[j];
}

// The depthwise loop body, inlined into a baseline and an AVX2/FMA variant.
__attribute__((always_inline)) inline void DepthwiseBody(const ConvGeometry& g, const float* image, const float* w,
                                                         float bias, float* out) {
  const int64_t plane = g.image[1] * g.image[2];
  const int64_t s = g.stride[2];
  const int64_t kw_count = g.kernel[2];
  const int64_t width = g.image[2];
  // Per horizontal tap: image offset and valid output range (divisions hoisted).
  std::vector<int64_t> lo(kw_count), hi(kw_count), off(kw_count);
  int64_t inner_lo = 0, inner_hi = g.col[2];  // outputs where every tap is inside the image
  for (int64_t kw = 0; kw < kw_count; ++kw) {
    off[kw] = kw * g.dilation[2] - g.pad_begin[2];
    ValidRange(off[kw], s, width, g.col[2], &lo[kw], &hi[kw]);
    inner_lo = std::max(inner_lo, lo[kw]);
    inner_hi = std::min(inner_hi, hi[kw]);
  }
  inner_hi = std::max(inner_hi, inner_lo);
  std::vector<const float*> rows(g.kernel[0] * g.kernel[1]), row_taps(rows.size());
  float* dst = out;
  for (int64_t z = 0; z < g.col[0]; ++z) {
    for (int64_t y = 0; y < g.col[1]; ++y, dst += g.col[2]) {
      std::fill(dst, dst + g.col[2], bias);
      // The image rows (and their taps) this output row reads.
      const int64_t num_rows =
          DepthwiseRows(g, z, y, image, plane, width, w, kw_count, rows.data(), row_taps.data());
      if (s == 1) {
        int64_t x = inner_lo;
        for (; x + 16 <= inner_hi; x += 16) {
          DepthwiseBlock<16>(rows.data(), row_taps.data(), num_rows, off.data(), kw_count, x, bias, dst);
        }
        for (; x + 8 <= inner_hi; x += 8) {
          DepthwiseBlock<8>(rows.data(), row_taps.data(), num_rows, off.data(), kw_count, x, bias, dst);
        }
        if (x < inner_hi && inner_hi - inner_lo >= 8) {  // last block overlaps the previous one
          DepthwiseBlock<8>(rows.data(), row_taps.data(), num_rows, off.data(), kw_count, inner_hi - 8, bias, dst);
          x = inner_hi;
        }
        for (; x < inner_hi; ++x) {
          DepthwiseBlock<1>(rows.data(), row_taps.data(), num_rows, off.data(), kw_count, x, bias, dst);
        }
        // Borders: taps that fall into the padding are skipped.
        for (int64_t r = 0; r < num_rows; ++r) {
          for (int64_t kw = 0; kw < kw_count; ++kw) {
            const float wv = row_taps[r][kw];
            const float* src = rows[r] + off[kw];
            for (int64_t xb = lo[kw]; xb < std::min(hi[kw], inner_lo); ++xb) dst[xb] += wv * src[xb];
            for (int64_t xb = std::max(lo[kw], inner_hi); xb < hi[kw]; ++xb) dst[xb] += wv * src[xb];
          }
        }
        continue;
      }
      for (int64_t r = 0; r < num_rows; ++r) {
        for (int64_t kw = 0; kw < kw_count; ++kw) {
          const float wv = row_taps[r][kw];
          const float* src = rows[r] + off[kw];
          for (int64_t x = lo[kw]; x < hi[kw]; ++x) dst[x] += wv * src[x * s];
        }
      }
    }
  }
}

__attribute__((target("avx2,fma"))) void DepthwiseAvx2(const ConvGeometry& g, const float* image, const float* w,
                                                       float bias, float* out) {
  DepthwiseBody(g, image, w, bias, out);
}

void DepthwiseBaseline(const ConvGeometry& g, const float* image, const float* w, float bias, float* out) {
  DepthwiseBody(g, image, w, bias, out);
}

// The AVX-512 depthwise loop: each output row in blocks of 16 lanes with one ZMM
// accumulator pair held across all taps; a tap's lanes that fall into the padding are
// masked off (neither read nor accumulated), which covers the borders without a
// scalar loop. Strided convs gather. Kernels wider than kMaxTaps taps per row, with more
// than kMaxRows rows, or output rows longer than kMaxBlocks blocks use DepthwiseBody.
constexpr int64_t kMaxTaps = 16, kMaxRows = 64, kMaxBlocks = 32;

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma"))) void DepthwiseAvx512(const ConvGeometry& g,
                                                                                      const float* image,
                                                                                      const float* w, float bias,
                                                                                      float* out) {
  const int64_t kw_count = g.kernel[2];
  const int64_t width_out = g.col[2];
  const int64_t blocks = (width_out + 15) / 16;
  if (kw_count > kMaxTaps || g.kernel[0] * g.kernel[1] > kMaxRows || blocks > kMaxBlocks) {
    DepthwiseBody(g, image, w, bias, out);
    return;
  }
  const int64_t plane = g.image[1] * g.image[2];
  const int64_t s = g.stride[2];
  const int64_t width = g.image[2];
  int64_t off[kMaxTaps];
  // tap_mask[b][kw]: lanes of block b whose input column for tap kw is inside the image.
  __mmask16 tap_mask[kMaxBlocks][kMaxTaps];
  __mmask16 store_mask[kMaxBlocks];
  const auto lanes = [](int64_t n) -> uint32_t { return n <= 0 ? 0u : (n >= 16 ? 0xFFFFu : (1u << n) - 1u); };
  for (int64_t b = 0; b < blocks; ++b) store_mask[b] = static_cast<__mmask16>(lanes(width_out - b * 16));
  for (int64_t kw = 0; kw < kw_count; ++kw) {
    off[kw] = kw * g.dilation[2] - g.pad_begin[2];
    int64_t lo, hi;
    ValidRange(off[kw], s, width, width_out, &lo, &hi);
    for (int64_t b = 0; b < blocks; ++b) {
      tap_mask[b][kw] = static_cast<__mmask16>(lanes(hi - b * 16) & ~lanes(lo - b * 16));
    }
  }
  const __m512i lane_index = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(static_cast<int>(s)));
  const float* rows[kMaxRows];
  const float* row_taps[kMaxRows];
  float* dst = out;
  for (int64_t z = 0; z < g.col[0]; ++z) {
    for (int64_t y = 0; y < g.col[1]; ++y, dst += width_out) {
      const int64_t num_rows =
          DepthwiseRows(g, z, y, image, plane, width, w, kw_count, rows, row_taps);
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t x = b * 16;
        const __mmask16* masks = tap_mask[b];
        __m512 acc = _mm512_set1_ps(bias), acc2 = _mm512_setzero_ps();
        for (int64_t r = 0; r < num_rows; ++r) {
          const float* taps = row_taps[r];
          // Addresses of masked-off lanes may lie outside the row; they are not accessed.
          const uintptr_t row = reinterpret_cast<uintptr_t>(rows[r]);
          for (int64_t kw = 0; kw < kw_count; ++kw) {
            const float* src = reinterpret_cast<const float*>(row + sizeof(float) * (x * s + off[kw]));
            const __m512 v = s == 1 ? _mm512_maskz_loadu_ps(masks[kw], src)
                                    : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), masks[kw], lane_index, src, 4);
            // Padding lanes keep their sum (no w * 0 term, as in the scalar loop).
            if (kw & 1) {
              acc2 = _mm512_mask3_fmadd_ps(_mm512_set1_ps(taps[kw]), v, acc2, masks[kw]);
            } else {
              acc = _mm512_mask3_fmadd_ps(_mm512_set1_ps(taps[kw]), v, acc, masks[kw]);
            }
          }
        }
        _mm512_mask_storeu_ps(dst + x, store_mask[b], _mm512_add_ps(acc, acc2));
      }
    }
  }
}

}  // namespace

void DepthwiseChannel(const ConvGeometry& g, const float* image, const float* w, float bias, float* out) {
  if (IsaAllowed(Isa::kAvx512)) {
    DepthwiseAvx512(g, image, w, bias, out);
  } else if (IsaAllowed(Isa::kAvx2)) {
    DepthwiseAvx2(g, image, w, bias, out);
  } else {
    DepthwiseBaseline(g, image, w, bias, out);
  }
}

}  // namespace qfuse::runtime::kernels::linalg
