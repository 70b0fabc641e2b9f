// Neural-network kernels: MaxPool/AveragePool, global pools, BatchNormalization, InstanceNormalization, LayerNormalization, LRN, Softmax, ReduceSum/Mean/Max and ArgMax.
#ifndef QFUSE_RUNTIME_KERNELS_NN_NN_H_
#define QFUSE_RUNTIME_KERNELS_NN_NN_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::kernels {

absl::StatusOr<std::unique_ptr<Kernel>> CreatePoolKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateGlobalPoolKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateBatchNormKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateInstanceNormKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateLayerNormKernel(const ir::Node& node);
// qfuse.SimplifiedLayerNormalization(X, Scale), axis and epsilon as LayerNormalization's: the
// RMS norm onnxruntime fuses Pow -> ReduceMean -> Add -> Sqrt -> Div -> Mul into, in its
// arithmetic (layer_norm_row.h from 16 values a row, its scalar form below); made by
// runtime/int8/layer_norm_fusion.h.
absl::StatusOr<std::unique_ptr<Kernel>> CreateSimplifiedLayerNormKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateLrnKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateSoftmaxKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateReduceKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateArgMaxKernel(const ir::Node& node);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_NN_NN_H_
