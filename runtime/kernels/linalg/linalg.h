// Linear-algebra kernels on Eigen GEMM: Conv (1-3D, groups, dilations, pads, auto_pad), ConvTranspose, Gemm, MatMul (batched, broadcast) and Einsum.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_LINALG_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_LINALG_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::kernels {

// The factories read the node's attributes and at most the types of inputs 0 and 1 (x, w),
// which a quantized unit's node (ir/fused_unit.h) shares with its base op: a unit's node
// gives its base op's kernel.
absl::StatusOr<std::unique_ptr<Kernel>> CreateConvKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateConvTransposeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateGemmKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateMatMulKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateEinsumKernel(const ir::Node& node);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_LINALG_H_
