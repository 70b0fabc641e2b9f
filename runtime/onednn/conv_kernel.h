// Float 2-D Conv and Conv units (Conv + bias + residual + activation) on oneDNN, reading
// and writing the channel-blocked layout (runtime/onednn/onednn_engine.h), with the
// residual add and activation as oneDNN post-ops of the convolution. Layers with many
// weights and few output pixels run channels-last inside the kernel (conv_kernel.cc).
#ifndef QFUSE_RUNTIME_ONEDNN_CONV_KERNEL_H_
#define QFUSE_RUNTIME_ONEDNN_CONV_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::onednn {

// Registry factories for "Conv" and qfuse.QuantUnit: the oneDNN kernel when UseOneDnn()
// and the node fits (FLOAT, 4-D constant weights, constant or no bias, a Conv unit),
// otherwise the hand-written kernel (runtime/kernels). The oneDNN kernel falls back to
// the hand-written one for a shape oneDNN refuses.
absl::StatusOr<std::unique_ptr<Kernel>> CreateFloatConvKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateFloatUnitKernel(const ir::Node& node);

// How many convolution primitives of the channels-last form (spatial convolutions with many
// weights and few output pixels per image, run on oneDNN's brgconv kernels between reorders)
// this process has made; tests check that the form ran.
int64_t ChannelsLastConvPrimitives();

// How many input shapes this process met for which oneDNN had only its reference (scalar)
// convolution in the blocked layout, so the channels-last form or the hand-written kernel ran.
int64_t ReferenceConvolutionsAvoided();

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_CONV_KERNEL_H_
