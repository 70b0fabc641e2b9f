// Weight and bias quantization: int8 symmetric weights with a non-saturated max-abs
// scale per output channel (or per tensor), int32 bias at scale input_scale *
// weight_scale. Rounding: half to even (as ONNX QuantizeLinear); weights clamp to
// [-127, 127]. A bias that would not fit int32 widens its channel's weight scale
// (onnxruntime's remedy) instead of saturating.
#ifndef QFUSE_QUANT_WEIGHT_QUANTIZER_H_
#define QFUSE_QUANT_WEIGHT_QUANTIZER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace qfuse::quant {

struct WeightQuantizeRequest {
  const ir::Tensor* weights = nullptr;  // FLOAT
  const ir::Tensor* bias = nullptr;     // FLOAT [channels], or nullptr
  float input_scale = 1.f;              // scale of the op's quantized input
  bool per_channel = true;
  int64_t channel_axis = 0;             // axis of `weights` indexing output channels; -1: per tensor only
};

struct QuantizedWeights {
  ir::Tensor weights;        // INT8, same dims
  ir::Tensor weight_scales;  // FLOAT [channels] (per channel) or [1]
  ir::Tensor bias;           // INT32 [channels] when a bias was given
  ir::Tensor bias_scales;    // FLOAT, input_scale * weight_scale, one per bias element or [1]
  int64_t axis = 0;
  int64_t widened_channels = 0;
};

// An all-zero channel gets scale 1 (all its weights quantize to 0).
absl::StatusOr<QuantizedWeights> QuantizeWeightsAndBias(const WeightQuantizeRequest& request);

}  // namespace qfuse::quant

#endif  // QFUSE_QUANT_WEIGHT_QUANTIZER_H_
