// The oneDNN form of an ONNX 2-D Conv: strides, 0-based dilations, both paddings, the
// weights' dims (grouped when group > 1) and the output dims, plus the one-time reorder of
// ONNX-layout weights into the format a primitive chose. Shared by the float and integer
// oneDNN convolutions.
#ifndef QFUSE_RUNTIME_ONEDNN_CONV_DESC_H_
#define QFUSE_RUNTIME_ONEDNN_CONV_DESC_H_

#include <cstdint>
#include <string>
#include <unordered_map>
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

// A convolution on channels-last (nhwc) source and destination of the given types, its
// weights (INT8 ONNX-layout `weights`, converted to `weights_type` by the reorder) in the
// format the primitive chose, and a user-managed scratchpad: callers execute one primitive
// from several threads at once, each passing its own scratchpad.
struct NhwcConv {
  dnnl::convolution_forward conv;
  dnnl::memory weights;
  dnnl::memory::desc src_desc, dst_desc, scratchpad_desc;
  dnnl::memory::desc bias_desc;  // zero (no bias) unless a bias type was given
  std::string implementation;    // oneDNN's choice (primitive_desc::impl_info_str)
};
// The primitive descriptor of that convolution (oneDNN's choice of implementation, before
// any code is generated). `attr` may carry zero points, scales and post-ops; the scratchpad
// mode is set here. A `bias_type` other than undef adds a bias [O] of that type. May throw
// dnnl::error.
dnnl::convolution_forward::primitive_desc NhwcConvDesc(const std::vector<int64_t>& x_dims, const ConvDims& d,
                                                       dnnl::memory::data_type src_type,
                                                       dnnl::memory::data_type weights_type,
                                                       dnnl::memory::data_type dst_type, dnnl::primitive_attr attr,
                                                       dnnl::memory::data_type bias_type);
// The convolution of `pd` (from NhwcConvDesc) with `weights` reordered into its format; may
// throw dnnl::error.
NhwcConv MakeNhwcConv(const dnnl::convolution_forward::primitive_desc& pd, const ConvDims& d,
                      const ir::Tensor& weights);
// NhwcConvDesc's descriptor and its convolution in one step; may throw dnnl::error.
NhwcConv MakeNhwcConv(const std::vector<int64_t>& x_dims, const ConvDims& d, const ir::Tensor& weights,
                      dnnl::memory::data_type src_type, dnnl::memory::data_type weights_type,
                      dnnl::memory::data_type dst_type, dnnl::primitive_attr attr,
                      dnnl::memory::data_type bias_type = dnnl::memory::data_type::undef);

// Whether a convolution implementation (primitive_desc::impl_info_str) is one of oneDNN's
// reference or GEMM-based fallbacks. They accept any post-ops, so a post-op chain that only
// they run can be slower than a JIT kernel without it: callers compare with the plain form.
bool IsFallbackImplementation(const std::string& implementation);

// Adds the calling thread's scratchpad for `conv` to `args` (a reused buffer that only grows),
// when the primitive needs one.
void AddThreadScratchpad(const NhwcConv& conv, std::unordered_map<int, dnnl::memory>* args);
// The same for any primitive made with a user-managed scratchpad of `scratchpad_desc`.
void AddThreadScratchpad(const dnnl::memory::desc& scratchpad_desc, std::unordered_map<int, dnnl::memory>* args);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_CONV_DESC_H_
