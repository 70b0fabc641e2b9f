// Float 2-D MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on oneDNN, reading
// and writing the channel-blocked layout (runtime/onednn/onednn_engine.h), so a pool
// between two oneDNN convolutions costs no layout conversion; and INT8 / UINT8 2-D MaxPool
// (the integer graph's pool between two integer units) in their channels-last layout.
#ifndef QFUSE_RUNTIME_ONEDNN_POOL_KERNEL_H_
#define QFUSE_RUNTIME_ONEDNN_POOL_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::onednn {

// Registry factories: the oneDNN kernel when UseOneDnn() and the node fits (FLOAT 4-D input
// with a known channel count, or INT8 / UINT8 for MaxPool; MaxPool without Indices output
// and dilations; AveragePool without ceil_mode; auto_pad NOTSET or VALID), otherwise the
// hand-written kernel (runtime/kernels/nn), which also runs any shape oneDNN refuses. The
// INT8 / UINT8 MaxPool writes channels-last even from a plain input (then converting it).
absl::StatusOr<std::unique_ptr<Kernel>> CreateOneDnnPoolKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateOneDnnGlobalPoolKernel(const ir::Node& node);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_POOL_KERNEL_H_
