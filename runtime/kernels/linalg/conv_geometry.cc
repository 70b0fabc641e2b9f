#include "runtime/kernels/linalg/conv_geometry.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ir/graph.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

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

}  // namespace qfuse::runtime::kernels::linalg
