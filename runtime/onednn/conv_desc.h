// The oneDNN form of an ONNX 2-D Conv: strides, 0-based dilations, both paddings, the
// weights' dims (grouped when group > 1) and the output dims, plus the one-time reorder of
// ONNX-layout weights into the format a primitive chose. Shared by the float and integer
// oneDNN convolutions.
#ifndef QFUSE_RUNTIME_ONEDNN_CONV_DESC_H_
#define QFUSE_RUNTIME_ONEDNN_CONV_DESC_H_

#include <cstdint>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "runtime/kernels/linalg/conv_geometry.h"

namespace qfuse::runtime::onednn {

struct ConvDims {
  dnnl::memory::dims strides, dilations, pad_l, pad_r;
  dnnl::memory::dims weights;   // [O, I/g, kh, kw] or [g, O/g, I/g, kh, kw]
  std::vector<int64_t> output;  // plain [N, O, OH, OW]
};

// For input dims [N, C, H, W] and ONNX weights dims [O, C/group, kh, kw]; errors as
// kernels::linalg::ResolveConv's.
absl::StatusOr<ConvDims> ResolveConvDims(const kernels::linalg::ConvAttrs& attrs, const std::vector<int64_t>& x_dims,
                                         const std::vector<int64_t>& w_dims);

// `weights` (ONNX layout, of dims `d.weights` and element type `type`) reordered into
// `desc`; may throw dnnl::error like every oneDNN call.
dnnl::memory ReorderWeights(const ir::Tensor& weights, const ConvDims& d, dnnl::memory::data_type type,
                            const dnnl::memory::desc& desc);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_CONV_DESC_H_
