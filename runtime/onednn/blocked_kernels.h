// Kernels that read and write the channel-blocked layout (onednn_engine.h) without calling
// oneDNN, so that a network of concatenations (DenseNet, SqueezeNet, GoogLeNet) stays blocked
// between its oneDNN convolutions instead of converting to plain and back around each one:
//  - Concat over channels of channel-blocked inputs whose channels fill whole blocks: the
//    blocks are concatenated as they are (the same values as a plain Concat); any other input
//    mix runs the plain kernel on plain inputs;
//  - qfuse.ChannelAffine (runtime/int8/int8_ops.h kChannelAffineOp): y = x * scale[c] +
//    shift[c], then Relu when asked, each rounded as the Mul, Add and Relu kernels round it,
//    in one pass over plain or blocked x (channels past C stay zero).
#ifndef QFUSE_RUNTIME_ONEDNN_BLOCKED_KERNELS_H_
#define QFUSE_RUNTIME_ONEDNN_BLOCKED_KERNELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::onednn {

// Registry factories.
absl::StatusOr<std::unique_ptr<Kernel>> CreateConcatKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateChannelAffineKernel(const ir::Node& node);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_BLOCKED_KERNELS_H_
