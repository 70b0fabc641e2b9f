// Float kernel of the quantized unit (ir/fused_unit.h): the base op's kernel computes
// the accumulator, then bias (MatMul), residual and activation are applied in place.
#ifndef QFUSE_RUNTIME_KERNELS_FUSED_QUANT_UNIT_H_
#define QFUSE_RUNTIME_KERNELS_FUSED_QUANT_UNIT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::kernels {

absl::StatusOr<std::unique_ptr<Kernel>> CreateQuantUnitKernel(const ir::Node& node);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_FUSED_QUANT_UNIT_H_
