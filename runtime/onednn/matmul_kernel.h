// Float MatMul and Gemm units (x times constant 2-D weights, + constant bias, + residual,
// + activation) on oneDNN's matmul primitive: weights packed once into its preferred format,
// the bias added by the primitive, the residual as a binary add post-op and the activation
// as eltwise post-ops. The transformer's projections and MLPs, and classifier heads.
#ifndef QFUSE_RUNTIME_ONEDNN_MATMUL_KERNEL_H_
#define QFUSE_RUNTIME_ONEDNN_MATMUL_KERNEL_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "ir/fused_unit.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::onednn {

// The oneDNN kernel for a float MatMul / Gemm unit `node` when UseOneDnn() and it fits
// (FLOAT; constant 2-D weights; a constant bias of one value per column, or none; Gemm with
// alpha 1, beta 1 and transA 0; MatMul input of rank >= 2), else `native`. A shape oneDNN
// refuses at run time runs on `native`.
absl::StatusOr<std::unique_ptr<Kernel>> MaybeOneDnnMatMulUnit(const ir::Node& node, const ir::UnitSpec& spec,
                                                              std::unique_ptr<Kernel> native);

// How many matmul primitives the kernels above have made in this process (one per kernel,
// number of rows and residual form): tests check that oneDNN ran.
int64_t OneDnnMatMulPrimitives();

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_MATMUL_KERNEL_H_
