// Weight and bias quantization: int8 symmetric weights with a non-saturated max-abs
// scale per output channel (or per tensor), int32 bias at scale input_scale *
// weight_scale. Rounding: half to even (as ONNX QuantizeLinear); weights clamp to
// [-127, 127], or to [-64, 64] with reduce_range (7-bit weights, onnxruntime's convention;
// numerics::kMaxAbsInt16PairWeight: x86 CPUs without VNNI then multiply exactly with
// vpmaddubsw; it costs about 6 dB of weight SQNR). A bias that would not fit widens its
// channel's weight scale (onnxruntime's remedy) instead of saturating: with K products per accumulator and inputs of at most
// max|x - zp_x|, the integer kernels need K * max|x - zp_x| * 127 + |bias_q| <= 2^31 - 1
// (numerics::CheckAccumulatorFitsInt32; 64 instead of 127 with reduce_range), so the bias gets
// what the products leave.
#ifndef QFUSE_QUANT_WEIGHT_QUANTIZER_H_
#define QFUSE_QUANT_WEIGHT_QUANTIZER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "numerics/requantize.h"

namespace qfuse::quant {

struct WeightQuantizeRequest {
  const ir::Tensor* weights = nullptr;  // FLOAT
  const ir::Tensor* bias = nullptr;     // FLOAT [channels], or nullptr
  float input_scale = 1.f;              // scale of the op's quantized input
  bool per_channel = true;
  int64_t channel_axis = 0;             // axis of `weights` indexing output channels; -1: per tensor only
  // Products summed into one accumulator (K) and max|x_q - zp_x| of the input type; with
  // num_products = 0 the bias only has to fit int32.
  int64_t num_products = 0;
  int64_t max_abs_input = 128;
  bool reduce_range = false;  // weights in [-64, 64] instead of [-127, 127]
};

// The largest |weight| the quantizer emits: 127, or 64 with reduce_range.
inline int MaxAbsQuantizedWeight(bool reduce_range) {
  return reduce_range ? numerics::kMaxAbsInt16PairWeight : 127;
}

struct QuantizedWeights {
  ir::Tensor weights;        // INT8, same dims
  ir::Tensor weight_scales;  // FLOAT [channels] (per channel) or [1]
  ir::Tensor bias;           // INT32 [channels] when a bias was given
  ir::Tensor bias_scales;    // FLOAT, input_scale * weight_scale, one per bias element or [1]
  int64_t axis = 0;
  int64_t widened_channels = 0;
  // Largest factor by which a channel's weight scale grew so that its bias fits (1: none);
  // each doubling costs about 6 dB of that channel's weight SQNR. +inf when no scale can make
  // the accumulator fit (K * max|x - zp_x| * 127 alone exceeds 2^31 - 1).
  double max_widening = 1;
  // What the widening costs where it matters, in the channel's output: over the widened
  // channels, the largest bound K * max|x - zp_x| * (s_w / 2) * s_x / |bias| on the output
  // error of the channel's weight rounding, relative to its bias (0: none widened; +inf with
  // max_widening). A channel widens only when |bias| > (2^31 - 1 - K * max|x - zp_x| * 127) *
  // s_x * s_w, at least about 2^31 / (K * max|x - zp_x| * 127) times its largest sum of
  // products, so its output is the bias to within that ratio, and the bound is about
  // K * max|x - zp_x| / (2 * (2^31 - 1 - K * max|x - zp_x| * 127)): 6e-6 for K = 192.
  double widened_output_error = 0;
};

// The weight-SQNR cost in dB of widening a scale by `factor` (20 log10 factor).
double WideningCostDb(double factor);

// The least weight scale: float32's epsilon, 2^-23, the floor PyTorch's observers put under
// every scale. Trained models carry dead channels (PaddleOCR's recogniser: max|w| of 3e-39,
// 1e-15, ...), whose max-abs scales would be denormal or nearly so: their bias scale
// s_x * s_w then loses its digits (onnxruntime still fuses the Conv into QLinearConv, qfuse
// did not, and the two differed), runtimes that flush denormals divide by zero, and the int32
// bias b / (s_x * s_w) overflows. On the floor such a channel's weights quantize to few levels
// or to 0, far below the layer's other channels.
inline constexpr float kMinWeightScale = 1.1920929e-07f;

// An all-zero channel gets scale 1 (all its weights quantize to 0).
absl::StatusOr<QuantizedWeights> QuantizeWeightsAndBias(const WeightQuantizeRequest& request);

}  // namespace qfuse::quant

#endif  // QFUSE_QUANT_WEIGHT_QUANTIZER_H_
