// The runtime a quantized model is made for: where its Q/DQ go, so that runtime runs integer
// kernels. qfuse's own placement is the most accurate; the others follow what onnxruntime's QDQ
// fusion and TensorRT's explicit quantization need (docs/deploy_targets.md has the rules and
// their sources).
#ifndef QFUSE_QUANT_DEPLOY_TARGET_H_
#define QFUSE_QUANT_DEPLOY_TARGET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fusion/pipeline.h"

namespace qfuse::quant {

enum class DeployTarget {
  // Units absorb Conv -> residual Add -> activation; one requantization per unit (qfuse's runtime).
  kQfuse,
  // onnxruntime's QDQ fusion (QLinearConv, QLinearAdd, QGemm, ...): a residual Add and any
  // activation but Relu/Clip sit outside the unit between their own Q/DQ; uint8 activations, so
  // a Relu/Clip before a QuantizeLinear is absorbed; 7-bit weights, so x86 without VNNI never
  // saturates vpmaddubsw.
  kOnnxRuntime,
  // TensorRT's explicit quantization: Q/DQ on the inputs of weighted ops and on residual inputs,
  // none between a Conv, its bias, the residual Add and the activation; symmetric int8
  // activations; float bias; weights as float -> QuantizeLinear -> DequantizeLinear.
  kTensorRt,
};

// "qfuse", "onnxruntime" or "tensorrt".
absl::StatusOr<DeployTarget> ParseDeployTarget(absl::string_view text);
const char* DeployTargetName(DeployTarget target);

// What the target's fusion level `full` lets a unit absorb.
fusion::UnitForms UnitFormsFor(DeployTarget target);

}  // namespace qfuse::quant

#endif  // QFUSE_QUANT_DEPLOY_TARGET_H_
