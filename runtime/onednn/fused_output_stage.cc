#include "runtime/onednn/fused_output_stage.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/onednn/onednn_engine.h"

namespace qfuse::runtime::onednn {
namespace {

// Every integer of magnitude up to 2^24 is a float32.
constexpr int64_t kFloatExactIntegers = int64_t{1} << 24;
// The largest source factor of a partial sum: |x - zp| for a uint8 source; for an int8 one,
// which oneDNN multiplies as x + 128, |x + 128 - zp| (see the header).
constexpr int64_t kMaxUint8SourceTerm = 255;
constexpr int64_t kMaxInt8SourceTerm = 383;

std::atomic<bool>& FusionEnabled() {
  static std::atomic<bool> enabled = [] {
    const char* v = std::getenv("QFUSE_FUSED_OUTPUT_STAGE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

std::atomic<int64_t>& FusedPrimitiveCount() {
  static std::atomic<int64_t> count{0};
  return count;
}
std::atomic<int64_t>& FusedByteMapCount() {
  static std::atomic<int64_t> count{0};
  return count;
}
std::atomic<int64_t>& ConversionClipCount() {
  static std::atomic<int64_t> count{0};
  return count;
}

// The division post-op's second operand: one float32 broadcast over the 4-D destination.
dnnl::memory::desc DivisorDesc() {
  return dnnl::memory::desc({1, 1, 1, 1}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw);
}

// Whether the destination's own conversion does the stage's clip: no byte map, and [lo + zp,
// hi + zp] is the destination type's whole range. oneDNN converts float32 to an int8 / uint8
// destination by saturating to that range and rounding half to even; the clip's bounds are
// whole numbers, so clipping before the rounding (and the addition of zp) or saturating after
// them gives the same value.
bool ConversionClips(const FusedOutputStage& fused, dnnl::memory::data_type out_type) {
  const int8::OutputStage::OnnxOneTermForm& f = fused.form;
  if (f.map.has_value()) return false;
  const float zp = static_cast<float>(f.zero_point);
  if (out_type == dnnl::memory::data_type::u8) return f.lo + zp == 0.f && f.hi + zp == 255.f;
  if (out_type == dnnl::memory::data_type::s8) return f.lo + zp == -128.f && f.hi + zp == 127.f;
  return false;
}

// Whether it also does the rounding: nothing is added after the rounding (zero point 0).
// Together they save two post-ops per vector, 7-14% of a pointwise layer of 16-24 input
// channels (docs/performance.md).
bool ConversionClipsAndRounds(const FusedOutputStage& fused, dnnl::memory::data_type out_type) {
  return fused.form.zero_point == 0 && ConversionClips(fused, out_type);
}

// Sets the output scales and the post-ops of `fused` on `attr`; may throw dnnl::error.
void SetFusedOutputStageAttr(const FusedOutputStage& fused, dnnl::memory::data_type out_type,
                             dnnl::primitive_attr* attr) {
  const std::vector<float>& m = fused.form.multipliers;
  // Mask 1 << 1: one scale per output channel (dim 1 of the destination).
  attr->set_output_scales(m.size() == 1 ? 0 : 1 << 1, m);
  dnnl::post_ops ops;
  if (fused.form.divisor != 1.f) ops.append_binary(dnnl::algorithm::binary_div, DivisorDesc());
  if (ConversionClipsAndRounds(fused, out_type)) {
    attr->set_post_ops(ops);
    return;
  }
  if (!ConversionClips(fused, out_type)) {
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, fused.form.lo, fused.form.hi);
  }
  ops.append_eltwise(1.f, dnnl::algorithm::eltwise_round, 0.f, 0.f);
  int32_t zero_point = fused.form.zero_point;
  // oneDNN 2.6's JIT kernels keep one eltwise injector per algorithm, made with the first
  // post-op's alpha and beta, so no algorithm may come twice with other parameters: the map's
  // multiply is pow(x, 1) * ratio and its clip is clip_v2 (the same forward function).
  if (const std::optional<int8::LinearByteMap>& map = fused.form.map; map.has_value()) {
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_pow, map->ratio, 1.f);
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip_v2, map->lo, map->hi);
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_round, 0.f, 0.f);
    zero_point = map->zero_point;
  }
  if (zero_point != 0) {
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, 1.f, static_cast<float>(zero_point));
  }
  attr->set_post_ops(ops);
}

}  // namespace

std::optional<FusedOutputStage> MakeFusedOutputStage(const int8::OutputStage& stage, const ir::Tensor& weights,
                                                     const std::vector<int32_t>& bias, FusedSource source) {
  if (!FusionEnabled().load()) return std::nullopt;
  std::optional<int8::OutputStage::OnnxOneTermForm> form = stage.OnnxOneTerm();
  if (!form.has_value() || weights.dtype() != ir::DataType::kInt8 || weights.rank() < 1) return std::nullopt;
  // Non-finite multipliers (scales whose product overflowed) can make a NaN, which oneDNN's s8
  // conversion saturates to 127 where qfuse's clamp gives the lower bound: qfuse's stage.
  if (!std::isfinite(form->divisor) ||
      !std::all_of(form->multipliers.begin(), form->multipliers.end(), [](float m) { return std::isfinite(m); })) {
    return std::nullopt;
  }
  const int64_t channels = weights.dims()[0];
  if (channels == 0 || (!bias.empty() && static_cast<int64_t>(bias.size()) != channels) ||
      (form->multipliers.size() != 1 && static_cast<int64_t>(form->multipliers.size()) != channels)) {
    return std::nullopt;
  }
  const int64_t per_channel = weights.num_elements() / channels;
  const absl::Span<const int8_t> w = weights.values<int8_t>();
  for (int64_t c = 0; c < channels; ++c) {
    int64_t abs_sum = 0;
    for (int64_t k = 0; k < per_channel; ++k) abs_sum += std::abs(int64_t{w[c * per_channel + k]});
    const int64_t b = bias.empty() ? 0 : std::abs(int64_t{bias[c]});
    const int64_t term = source == FusedSource::kInt8 ? kMaxInt8SourceTerm : kMaxUint8SourceTerm;
    if (term * abs_sum + b > kFloatExactIntegers) return std::nullopt;
  }
  return FusedOutputStage{*std::move(form), bias};
}

std::vector<std::pair<int, dnnl::memory>> FusedOutputStageArgs(const FusedOutputStage& fused,
                                                               const dnnl::memory::desc& bias_desc) {
  std::vector<std::pair<int, dnnl::memory>> args;
  if (!fused.bias.empty()) {
    args.emplace_back(DNNL_ARG_BIAS, dnnl::memory(bias_desc, Engine(), const_cast<int32_t*>(fused.bias.data())));
  }
  if (fused.form.divisor != 1.f) {
    // Post-op 0 (SetFusedOutputStageAttr puts the division first).
    args.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                      dnnl::memory(DivisorDesc(), Engine(), const_cast<float*>(&fused.form.divisor)));
  }
  return args;
}

int64_t FusedOutputStagePrimitives() { return FusedPrimitiveCount().load(); }
int64_t FusedByteMapPrimitives() { return FusedByteMapCount().load(); }
int64_t ConversionClipPrimitives() { return ConversionClipCount().load(); }

std::optional<NhwcConv> MakeFusedNhwcConv(const FusedOutputStage& fused, const std::vector<int64_t>& x_dims,
                                          const ConvDims& d, const ir::Tensor& weights,
                                          dnnl::memory::data_type src_type, dnnl::memory::data_type out_type,
                                          const std::function<dnnl::primitive_attr()>& base_attr) {
  using dnnl::memory;
  try {
    dnnl::primitive_attr attr = base_attr();
    SetFusedOutputStageAttr(fused, out_type, &attr);
    const memory::data_type bias_type = fused.bias.empty() ? memory::data_type::undef : memory::data_type::s32;
    const dnnl::convolution_forward::primitive_desc pd =
        NhwcConvDesc(x_dims, d, src_type, memory::data_type::s8, out_type, attr, bias_type);
    if (IsFallbackImplementation(pd.impl_info_str()) &&
        !IsFallbackImplementation(NhwcConvDesc(x_dims, d, src_type, memory::data_type::s8, memory::data_type::s32,
                                               base_attr(), memory::data_type::undef)
                                      .impl_info_str())) {
      return std::nullopt;
    }
    NhwcConv conv = MakeNhwcConv(pd, d, weights);
    FusedPrimitiveCount().fetch_add(1);
    if (fused.form.map.has_value()) FusedByteMapCount().fetch_add(1);
    if (ConversionClips(fused, out_type)) ConversionClipCount().fetch_add(1);
    return conv;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

void SetOutputStageFusion(bool enabled) { FusionEnabled().store(enabled); }

}  // namespace qfuse::runtime::onednn
