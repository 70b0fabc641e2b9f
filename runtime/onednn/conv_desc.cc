#include "runtime/onednn/conv_desc.h"

#include "base/status_macros.h"
#include "runtime/onednn/onednn_engine.h"

namespace qfuse::runtime::onednn {

absl::StatusOr<ConvDims> ResolveConvDims(const kernels::linalg::ConvAttrs& attrs, const std::vector<int64_t>& x_dims,
                                         const std::vector<int64_t>& w_dims) {
  QFUSE_ASSIGN_OR_RETURN(kernels::linalg::ConvGeometry g,
                         kernels::linalg::ResolveConv(attrs, {x_dims[2], x_dims[3]}, {w_dims[2], w_dims[3]}));
  ConvDims d;
  // ConvGeometry keeps three spatial dims; a 2-D conv uses the last two.
  for (int i = 1; i <= 2; ++i) {
    const int64_t extent = (g.kernel[i] - 1) * g.dilation[i] + 1;
    d.strides.push_back(g.stride[i]);
    d.dilations.push_back(g.dilation[i] - 1);
    d.pad_l.push_back(g.pad_begin[i]);
    d.pad_r.push_back((g.col[i] - 1) * g.stride[i] + extent - g.image[i] - g.pad_begin[i]);
  }
  const int64_t group = attrs.group, out_channels = w_dims[0];
  d.weights = group > 1 ? dnnl::memory::dims{group, out_channels / group, w_dims[1], w_dims[2], w_dims[3]}
                        : dnnl::memory::dims{out_channels, w_dims[1], w_dims[2], w_dims[3]};
  d.output = {x_dims[0], out_channels, g.col[1], g.col[2]};
  return d;
}

dnnl::memory ReorderWeights(const ir::Tensor& weights, const ConvDims& d, dnnl::memory::data_type type,
                            const dnnl::memory::desc& desc) {
  const dnnl::memory::format_tag onnx_tag =
      d.weights.size() == 5 ? dnnl::memory::format_tag::goihw : dnnl::memory::format_tag::oihw;
  dnnl::memory user({d.weights, type, onnx_tag}, Engine(), const_cast<void*>(weights.raw_data()));
  dnnl::memory reordered(desc, Engine());
  dnnl::reorder(user, reordered).execute(Stream(), user, reordered);
  Stream().wait();
  return reordered;
}

dnnl::convolution_forward::primitive_desc NhwcConvDesc(const std::vector<int64_t>& x_dims, const ConvDims& d,
                                                       dnnl::memory::data_type src_type,
                                                       dnnl::memory::data_type weights_type,
                                                       dnnl::memory::data_type dst_type, dnnl::primitive_attr attr,
                                                       dnnl::memory::data_type bias_type) {
  using dnnl::memory;
  const memory::desc src_desc(memory::dims(x_dims.begin(), x_dims.end()), src_type, memory::format_tag::nhwc);
  const memory::desc dst_desc(memory::dims(d.output.begin(), d.output.end()), dst_type, memory::format_tag::nhwc);
  const memory::desc w_any(d.weights, weights_type, memory::format_tag::any);
  const memory::desc bias_desc = bias_type == memory::data_type::undef
                                     ? memory::desc()
                                     : memory::desc({d.output[1]}, bias_type, memory::format_tag::x);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                       src_desc, w_any, bias_desc, dst_desc, d.strides, d.dilations, d.pad_l,
                                       d.pad_r);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return dnnl::convolution_forward::primitive_desc(desc, attr, Engine());
}

NhwcConv MakeNhwcConv(const std::vector<int64_t>& x_dims, const ConvDims& d, const ir::Tensor& weights,
                      dnnl::memory::data_type src_type, dnnl::memory::data_type weights_type,
                      dnnl::memory::data_type dst_type, dnnl::primitive_attr attr,
                      dnnl::memory::data_type bias_type) {
  return MakeNhwcConv(NhwcConvDesc(x_dims, d, src_type, weights_type, dst_type, attr, bias_type), d, weights);
}

NhwcConv MakeNhwcConv(const dnnl::convolution_forward::primitive_desc& pd, const ConvDims& d,
                      const ir::Tensor& weights) {
  NhwcConv c;
  c.src_desc = pd.src_desc();
  c.dst_desc = pd.dst_desc();
  c.bias_desc = pd.bias_desc();
  c.conv = dnnl::convolution_forward(pd);
  c.scratchpad_desc = pd.scratchpad_desc();
  c.implementation = pd.impl_info_str();
  c.weights = ReorderWeights(weights, d, dnnl::memory::data_type::s8, pd.weights_desc());
  return c;
}

bool IsFallbackImplementation(const std::string& implementation) {
  return implementation.rfind("ref", 0) == 0 || implementation.find("gemm") != std::string::npos;
}

void AddThreadScratchpad(const NhwcConv& conv, std::unordered_map<int, dnnl::memory>* args) {
  AddThreadScratchpad(conv.scratchpad_desc, args);
}

void AddThreadScratchpad(const dnnl::memory::desc& scratchpad_desc, std::unordered_map<int, dnnl::memory>* args) {
  thread_local std::vector<uint8_t> scratchpad;
  const size_t bytes = scratchpad_desc.get_size();
  if (bytes == 0) return;
  if (scratchpad.size() < bytes) scratchpad.resize(bytes);
  args->emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad_desc, Engine(), scratchpad.data()));
}

}  // namespace qfuse::runtime::onednn
