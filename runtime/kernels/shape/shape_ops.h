// Data-movement kernels: Flatten, Reshape, Transpose, Concat, Split, Slice, Squeeze, Unsqueeze, Gather, Shape, Pad,
// Resize, ConstantOfShape, Expand, Range, ScatterND.
#ifndef QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_OPS_H_
#define QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_OPS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::kernels {

absl::StatusOr<std::unique_ptr<Kernel>> CreateFlattenKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateReshapeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateTransposeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateConcatKernel(const ir::Node& node);
// The Concat kernel along `axis` (normalised against each run's input rank), for kernels
// that concatenate tensors of another layout (runtime/onednn/blocked_kernels.h).
std::unique_ptr<Kernel> MakeConcatKernel(int64_t axis);
absl::StatusOr<std::unique_ptr<Kernel>> CreateSplitKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateSliceKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateSqueezeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateUnsqueezeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateGatherKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateShapeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreatePadKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateResizeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateConstantOfShapeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateExpandKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateRangeKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateScatterNdKernel(const ir::Node& node);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_SHAPE_SHAPE_OPS_H_
