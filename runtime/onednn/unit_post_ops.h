// A fused unit's activation (ir/fused_unit.h) as oneDNN eltwise post-ops, shared by the float
// convolution and matmul kernels on oneDNN.
#ifndef QFUSE_RUNTIME_ONEDNN_UNIT_POST_OPS_H_
#define QFUSE_RUNTIME_ONEDNN_UNIT_POST_OPS_H_

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/fused_unit.h"

namespace qfuse::runtime::onednn {

// Appends the unit's activation (after any residual add already in `ops`); none adds nothing.
void AppendUnitActivation(const ir::UnitSpec& spec, dnnl::post_ops* ops);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_UNIT_POST_OPS_H_
