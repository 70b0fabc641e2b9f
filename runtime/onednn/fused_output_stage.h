// A unit's output stage computed inside oneDNN's int8 convolution: the int32 bias, one
// float32 multiplier per channel (oneDNN's output scales) and three eltwise post-ops (clip,
// round half to even, + zero point) give the bytes of qfuse's own one-term kOnnx stage
// (runtime/int8/output_stage.h) straight into the int8 / uint8 output, without the int32
// accumulators going through memory.
//
// Why the bytes are the same. qfuse computes q = rne(clamp(float32(acc + bias) * m[c] / d, lo,
// hi)) + zp with lo, hi the stage's integer bounds minus zp, and d the output scale in the
// integer-head form (dequantize, then QuantizeLinear's division), else no division. oneDNN
// sums the products in int32; the products' sum, the source zero point's compensation
// zp * sum(w) and the bias are each at most 255 * sum|w[c]| + |bias[c]| in magnitude, and so is
// every partial sum of them in any order (the first two differ by the centred sum), so when
//     255 * sum_k |w[c][k]| + |bias[c]| <= 2^24
// every float32 conversion and addition is exact and oneDNN multiplies qfuse's float32(acc +
// bias) by m[c] (its output scales; one float32 rounding, as qfuse). Then the post-ops: a
// binary division by d (IEEE division, as qfuse), clip to [lo, hi], round half to even, add
// zp, and the conversion of the whole number to the output type. A linear byte map (a clamp
// folded into the unit, OutputStage::SetByteMap) replaces the last step by its own: multiply
// by its ratio (one float32 rounding, as qfuse; oneDNN's pow with exponent 1 is that
// multiply), clip, round, add its zp. Clipping before or after a rounding gives the same
// result because the bounds are whole numbers. Make checks the bound per unit.
// fused_output_stage_test and qlinear_conv_kernel_test compare the bytes with qfuse's stage.
#ifndef QFUSE_RUNTIME_ONEDNN_FUSED_OUTPUT_STAGE_H_
#define QFUSE_RUNTIME_ONEDNN_FUSED_OUTPUT_STAGE_H_

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/tensor.h"
#include "runtime/int8/output_stage.h"

namespace qfuse::runtime::onednn {

struct FusedOutputStage {
  int8::OutputStage::OnnxOneTermForm form;
  std::vector<int32_t> bias;  // [out channels], or empty without a bias
};

// The fused form of a unit's output stage `stage` with INT8 ONNX-layout conv weights
// [O, I/group, kh, kw] and int32 `bias` (empty or one per output channel), or nullopt where
// it would not give qfuse's bytes: a stage without the one-term float form, a channel whose
// sums could leave float32's exact integers (the bound above), or fusion switched off.
std::optional<FusedOutputStage> MakeFusedOutputStage(const int8::OutputStage& stage, const ir::Tensor& weights,
                                                     const std::vector<int32_t>& bias);

// Sets the output scales and the post-ops of `fused` on `attr`.
void SetFusedOutputStageAttr(const FusedOutputStage& fused, dnnl::primitive_attr* attr);
// Adds the execution arguments of `fused` to `args`: its bias (of the primitive's
// `bias_desc`) and the divisor of the division post-op. They point into `fused`.
void AddFusedOutputStageArgs(const FusedOutputStage& fused, const dnnl::memory::desc& bias_desc,
                             std::unordered_map<int, dnnl::memory>* args);

// How many convolution primitives with a fused output stage this process has made (tests
// check that fusion ran); the kernel counts each one it makes.
int64_t FusedOutputStagePrimitives();
void CountFusedOutputStagePrimitive();

// Switches fusion on or off for kernels made from now on (process-wide; default on, and
// QFUSE_FUSED_OUTPUT_STAGE=0 sets it off at start). Tests and benchmarks compare both.
void SetOutputStageFusion(bool enabled);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_FUSED_OUTPUT_STAGE_H_
