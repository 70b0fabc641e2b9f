// A unit's output stage computed inside oneDNN's int8 convolution: the int32 bias, the float32
// multipliers (oneDNN's output scales, per channel or per tensor) and up to seven post-ops
// give the bytes of qfuse's own one-term kOnnx stage (runtime/int8/output_stage.h) straight
// into the int8 / uint8 output, without the int32 accumulators going through memory.
//
// Why the bytes are the same. qfuse computes q = rne(clamp(float32(acc + bias) * m[c] / d, lo,
// hi)) + zp with lo, hi the stage's integer bounds minus zp, and d the output scale in the
// integer-head form (dequantize, then QuantizeLinear's division), else no division. oneDNN
// sums the products in int32, adds the compensations of the zero point (and, for an int8
// source, of its own +128 shift: it multiplies uint8 x + 128) and the bias, converts to float32
// and multiplies by m[c] (its output scales; one float32 rounding, as qfuse). Every partial sum
// of those terms, in any order and as int32 or float32, is at most
//     S * sum_k |w[c][k]| + |bias[c]|,   S = 255 for a uint8 source, 383 for an int8 one
// in magnitude (x + 128 - zp spans up to 383 for int8 x), so when that is at most 2^24 every
// conversion and addition is exact and oneDNN multiplies qfuse's float32(acc + bias).
// MakeFusedOutputStage checks the bound per channel. Then the post-ops: a binary division by d
// (IEEE division, as qfuse), clip to [lo, hi], round half to even, add zp, and the conversion
// of the whole number to the output type. Where [lo + zp, hi + zp] is the output type's whole
// range the clip is left to that conversion, which saturates to the type's range and rounds
// half to even (ConversionClipPrimitives counts these), and with zero point 0 the rounding too. A linear byte map (a clamp folded into the unit,
// OutputStage::SetByteMap) replaces the last step by its own: multiply by its ratio (one
// float32 rounding, as qfuse; oneDNN's pow with exponent 1 is that multiply), clip, round,
// add its zp. Clipping before or after a rounding gives the same result because the bounds
// are whole numbers.
// oneDNN 2.6's JIT kernels keep one eltwise injector per algorithm, made with the first such
// post-op's parameters, so no algorithm may come twice with other parameters: the map's
// multiply is eltwise_pow and its clip eltwise_clip_v2.
// fused_output_stage_test and qlinear_conv_kernel_test compare the bytes with qfuse's stage.
#ifndef QFUSE_RUNTIME_ONEDNN_FUSED_OUTPUT_STAGE_H_
#define QFUSE_RUNTIME_ONEDNN_FUSED_OUTPUT_STAGE_H_

#include <cstdint>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "runtime/int8/output_stage.h"
#include "runtime/onednn/conv_desc.h"

namespace qfuse::runtime::onednn {

struct FusedOutputStage {
  int8::OutputStage::OnnxOneTermForm form;
  std::vector<int32_t> bias;  // [out channels], or empty without a bias
};

// The source's data type as oneDNN reads it (an int8 source it shifts by 128 itself).
enum class FusedSource { kUint8, kInt8 };

// The fused form of a unit's output stage `stage` with INT8 ONNX-layout conv weights
// [O, I/group, kh, kw], int32 `bias` (empty or one per output channel) and a source that
// reaches oneDNN as `source`, or nullopt where it would not give qfuse's bytes: a stage
// without the one-term float form (kFixed, two terms, a float output, a byte map without a
// linear form), a channel whose sums could leave float32's exact integers (the bound above),
// or fusion switched off.
std::optional<FusedOutputStage> MakeFusedOutputStage(const int8::OutputStage& stage, const ir::Tensor& weights,
                                                     const std::vector<int32_t>& bias, FusedSource source);

// The channels-last convolution (conv_desc.h's MakeNhwcConv) of `weights` on a source of
// `src_type` that writes `out_type` bytes through `fused`, with the attributes `base_attr()`
// makes (zero points) plus the stage's; nullopt when oneDNN refuses it, or when only its
// reference / GEMM fallbacks take it where a JIT kernel takes the plain form (int32 output,
// no post-ops). Counts the primitives it makes (FusedOutputStagePrimitives).
std::optional<NhwcConv> MakeFusedNhwcConv(const FusedOutputStage& fused, const std::vector<int64_t>& x_dims,
                                          const ConvDims& d, const ir::Tensor& weights,
                                          dnnl::memory::data_type src_type, dnnl::memory::data_type out_type,
                                          const std::function<dnnl::primitive_attr()>& base_attr);
// The execution arguments of `fused`: its bias (of the primitive's `bias_desc`) and the divisor
// of the division post-op, made once per primitive. They point into `fused`.
std::vector<std::pair<int, dnnl::memory>> FusedOutputStageArgs(const FusedOutputStage& fused,
                                                               const dnnl::memory::desc& bias_desc);

// How many convolution primitives with a fused output stage this process has made, and how
// many of them with a linear byte map (tests check that fusion ran).
int64_t FusedOutputStagePrimitives();
int64_t FusedByteMapPrimitives();
// How many of them leave the clip to the destination's conversion (no byte map, clip bounds
// plus the zero point the destination type's whole range).
int64_t ConversionClipPrimitives();

// Switches fusion on or off for kernels made from now on (process-wide; default on, and
// QFUSE_FUSED_OUTPUT_STAGE=0 sets it off at start; any other value leaves it on). Tests and benchmarks compare both.
void SetOutputStageFusion(bool enabled);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_FUSED_OUTPUT_STAGE_H_
