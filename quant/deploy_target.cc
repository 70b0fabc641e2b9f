#include "quant/deploy_target.h"

#include "absl/strings/str_cat.h"

namespace qfuse::quant {

absl::StatusOr<DeployTarget> ParseDeployTarget(absl::string_view text) {
  for (DeployTarget t : {DeployTarget::kQfuse, DeployTarget::kOnnxRuntime, DeployTarget::kTensorRt}) {
    if (text == DeployTargetName(t)) return t;
  }
  return absl::InvalidArgumentError(absl::StrCat("target '", text, "' is not qfuse, onnxruntime or tensorrt"));
}

const char* DeployTargetName(DeployTarget target) {
  switch (target) {
    case DeployTarget::kQfuse: return "qfuse";
    case DeployTarget::kOnnxRuntime: return "onnxruntime";
    case DeployTarget::kTensorRt: return "tensorrt";
  }
  return "?";
}

fusion::UnitForms UnitFormsFor(DeployTarget target) {
  fusion::UnitForms forms;
  if (target == DeployTarget::kOnnxRuntime) {
    // QLinearConv / QLinearMatMul end at their QuantizeLinear: a residual Add, a MatMul's bias
    // Add and a non-clamp activation in between would leave the convolution in float.
    forms.residual_add = false;
    forms.matmul_bias = false;
    forms.non_clamp_activations = false;
  }
  return forms;
}

}  // namespace qfuse::quant
