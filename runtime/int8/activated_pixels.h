// The float epilogue of an integer unit with a non-linear activation (output_stage.h) in one
// pass over channels-last pixels with AVX-512: per 16 channels, the dequantized sum, the
// activation and ONNX QuantizeLinear in registers, instead of three passes through a float
// buffer. Each step is the vector step of the three-pass path, lane for lane (the same IEEE
// operations in the same order, no FMA: built with -ffp-contract=off), so the bytes are
// OutputStage::DequantizePixels -> ir::ApplyUnitActivation -> OutputStage::QuantizeRealRow's:
// HardSwish, HardSigmoid, LeakyRelu, and Sigmoid and SiLU with onnxruntime's logistic
// (ir/logistic.h: its fused multiply-adds are explicit, so they stay fused).
#ifndef QFUSE_RUNTIME_INT8_ACTIVATED_PIXELS_H_
#define QFUSE_RUNTIME_INT8_ACTIVATED_PIXELS_H_

#include <cstdint>

#include "ir/fused_unit.h"

namespace qfuse::runtime::int8 {

// The stage's numbers and the buffers of one call (OutputStage::ActivatePixels fills them).
struct ActivatedPixelsArgs {
  const int32_t* a = nullptr;     // [pixels][channels] int32 sums
  const int32_t* bias = nullptr;  // [channels] or null
  const uint8_t* b = nullptr;     // [pixels][channels] second term (residual) bytes, or null
  bool b_signed = false;
  int32_t b_zero_point = 0;
  const float* dequant_a = nullptr;  // [channels], or one value when dequant_a_per_tensor
  bool dequant_a_per_tensor = false;
  float dequant_b = 0.f;
  float act_min = 0.f, act_max = 0.f;  // the stage's bounds on the dequantized value
  ir::UnitSpec activation;
  float output_scale = 1.f;
  int32_t output_zero_point = 0;
  bool out_signed = false;  // int8 (else uint8) bytes
  int64_t channels = 0, pixels = 0;
  uint8_t* out = nullptr;  // [pixels][channels]
};

// True when the activation is one of those and the ISA cap allows AVX-512 (the caller checks
// its own vector level first); false when nothing was written.
bool ActivatePixelsInOnePass(const ActivatedPixelsArgs& args);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_ACTIVATED_PIXELS_H_
