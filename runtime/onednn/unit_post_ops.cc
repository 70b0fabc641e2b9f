#include "runtime/onednn/unit_post_ops.h"

namespace qfuse::runtime::onednn {

void AppendUnitActivation(const ir::UnitSpec& spec, dnnl::post_ops* ops) {
  using dnnl::algorithm;
  switch (spec.activation) {
    case ir::UnitActivation::kNone:
      return;
    case ir::UnitActivation::kRelu:
      return ops->append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    case ir::UnitActivation::kLeakyRelu:
      return ops->append_eltwise(1.f, algorithm::eltwise_relu, spec.alpha, 0.f);
    case ir::UnitActivation::kRelu6:
    case ir::UnitActivation::kClip:
      return ops->append_eltwise(1.f, algorithm::eltwise_clip, spec.ClampBounds().lo, spec.ClampBounds().hi);
    case ir::UnitActivation::kHardSwish:
      return ops->append_eltwise(1.f, algorithm::eltwise_hardswish, 0.f, 0.f);
    case ir::UnitActivation::kHardSigmoid:
      ops->append_eltwise(1.f, algorithm::eltwise_linear, spec.alpha, spec.beta);
      return ops->append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 1.f);
    case ir::UnitActivation::kSigmoid:
      return ops->append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f);
    case ir::UnitActivation::kSilu:
      return ops->append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f);
  }
}

}  // namespace qfuse::runtime::onednn
