#include "runtime/onednn/float_exact_conv.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "absl/strings/str_cat.h"
#include "base/grow_buffer.h"
#include "base/status_macros.h"
#include "runtime/onednn/conv_desc.h"
#include "runtime/onednn/onednn_engine.h"

namespace qfuse::runtime::onednn {

using dnnl::memory;

struct FloatExactConv::Primitive : NhwcConv {
  int64_t out_elements = 0;
};

bool FloatSumsAreExact(const ir::Tensor& weights, int32_t max_abs_x) {
  if (weights.dtype() != ir::DataType::kInt8 || weights.rank() != 4) return false;
  int64_t max_abs_w = 0;
  for (int8_t w : weights.values<int8_t>()) max_abs_w = std::max<int64_t>(max_abs_w, std::abs(int{w}));
  const int64_t k = weights.dims()[1] * weights.dims()[2] * weights.dims()[3];
  return k * max_abs_x * max_abs_w < (int64_t{1} << 24);
}

FloatExactConv::FloatExactConv(kernels::linalg::ConvAttrs attrs, ir::Tensor weights)
    : attrs_(std::move(attrs)), weights_(std::move(weights)) {}

FloatExactConv::~FloatExactConv() = default;

absl::StatusOr<const FloatExactConv::Primitive*> FloatExactConv::Find(const std::vector<int64_t>& x_dims) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(x_dims);
  if (it != cache_.end()) return it->second.get();
  QFUSE_ASSIGN_OR_RETURN(ConvDims d, ResolveConvDims(attrs_, x_dims, weights_.dims()));
  auto p = std::make_unique<Primitive>();
  try {
    // The int8 weights converted to float32 by the reorder itself.
    static_cast<NhwcConv&>(*p) = MakeNhwcConv(x_dims, d, weights_, memory::data_type::f32, memory::data_type::f32,
                                              memory::data_type::f32, dnnl::primitive_attr());
  } catch (const dnnl::error& e) {
    return absl::UnimplementedError(absl::StrCat("oneDNN refuses this float32 convolution: ", e.what()));
  }
  p->out_elements = 1;
  for (int64_t v : d.output) p->out_elements *= v;
  return cache_.emplace(x_dims, std::move(p)).first->second.get();
}

absl::Status FloatExactConv::Accumulate(const uint8_t* x, uint8_t flip, int32_t zero_point,
                                        const std::vector<int64_t>& x_dims, int32_t* acc) {
  QFUSE_ASSIGN_OR_RETURN(const Primitive* p, Find(x_dims));
  thread_local std::vector<float> source, sums;
  const int64_t n = x_dims[0] * x_dims[1] * x_dims[2] * x_dims[3];
  GrowTo(source, n);
  GrowTo(sums, p->out_elements);
  float* xf = source.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) xf[i] = static_cast<float>(int32_t{static_cast<uint8_t>(x[i] ^ flip)} - zero_point);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(p->src_desc, Engine(), xf)},
                                          {DNNL_ARG_WEIGHTS, p->weights},
                                          {DNNL_ARG_DST, memory(p->dst_desc, Engine(), sums.data())}};
  AddThreadScratchpad(*p, &args);
  try {
    p->conv.execute(Stream(), args);
    Stream().wait();
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("oneDNN float32 convolution failed: ", e.what()));
  }
  // Integer-valued sums below 2^24: the conversion is exact.
  const float* s = sums.data();
  const int64_t outs = p->out_elements;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < outs; ++i) acc[i] = static_cast<int32_t>(s[i]);
  return absl::OkStatus();
}

}  // namespace qfuse::runtime::onednn
