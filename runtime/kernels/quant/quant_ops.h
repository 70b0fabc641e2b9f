// The standard ONNX quantized operators on the reference runtime: QuantizeLinear and
// DequantizeLinear (per tensor or per axis), QLinearConv and ConvInteger (im2col + int8
// GEMM), QLinearMatMul and MatMulInteger (batched, broadcast). Integer outputs are
// bit-exact with onnxruntime: QLinear* requantize with numerics::RequantizeOnnx.
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_QUANT_OPS_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_QUANT_OPS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::kernels {

absl::StatusOr<std::unique_ptr<Kernel>> CreateQuantizeLinearKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateDequantizeLinearKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearConvKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateConvIntegerKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearMatMulKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateMatMulIntegerKernel(const ir::Node& node);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_QUANT_OPS_H_
