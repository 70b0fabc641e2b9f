// The kernel interface of the reference runtime: one Kernel object per graph node,
// created (attributes parsed and validated) at Prepare, run many times.
#ifndef QFUSE_RUNTIME_KERNEL_H_
#define QFUSE_RUNTIME_KERNEL_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime {

using ir::Tensor;

struct KernelContext {
  const ThreadPool* pool = nullptr;  // never null during Run
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Computes the node's outputs. `inputs[i]` is null for an omitted optional input.
  // `outputs` has one slot per node output; the kernel assigns each (shape and type
  // come from the inputs at run time, so batch size may change between runs).
  // Errors name the problem (shape mismatch, bad value); the executor adds the node.
  virtual absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                           absl::Span<Tensor> outputs) = 0;

  // Layouts (runtime/onednn/onednn_engine.h). 0: output `output` is plain ONNX layout;
  // n > 0: it is channel-blocked and holds n logical channels. Fixed at creation.
  virtual int64_t blocked_channels(int output) const { return 0; }
  // True when input `input` may be handed over channel-blocked; otherwise the executor
  // converts it to plain first.
  virtual bool accepts_blocked(int input) const { return false; }
};

// Creates the kernel for `node`, parsing its attributes once. Unsupported attribute
// values are an UnimplementedError saying which.
using KernelFactory = absl::StatusOr<std::unique_ptr<Kernel>> (*)(const ir::Node& node);

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_KERNEL_H_
