// The kernel interface of the reference runtime: one Kernel object per graph node,
// created (attributes parsed and validated) at Prepare, run many times.
#ifndef QFUSE_RUNTIME_KERNEL_H_
#define QFUSE_RUNTIME_KERNEL_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime {

using ir::Tensor;

// How a 4-D activation is stored between two kernels (runtime/onednn/onednn_engine.h):
//   kPlain           ONNX's row-major NCHW
//   kChannelBlocked  FLOAT [N, ceil(C/B), H, W, B], B = 16 or 8 (oneDNN nChw16c / nChw8c)
//   kChannelsLast    INT8/UINT8 [N, H, W, C] (oneDNN nhwc)
// Only kernels that say so produce or read the non-plain kinds; the executor converts
// for every other reader, for observers and for graph outputs.
enum class LayoutKind { kPlain, kChannelBlocked, kChannelsLast };
struct TensorLayout {
  LayoutKind kind = LayoutKind::kPlain;
  int64_t channels = 0;  // the logical C of a non-plain layout
};

// The ONNX (plain) dims of `t` stored in `layout`: [N, C, H, W] for both non-plain kinds.
inline std::vector<int64_t> PlainDims(const Tensor& t, const TensorLayout& layout) {
  const std::vector<int64_t>& d = t.dims();
  switch (layout.kind) {
    case LayoutKind::kChannelBlocked: return {d[0], layout.channels, d[2], d[3]};
    case LayoutKind::kChannelsLast: return {d[0], layout.channels, d[1], d[2]};
    case LayoutKind::kPlain: break;
  }
  return d;
}

struct KernelContext {
  const ThreadPool* pool = nullptr;  // never null during Run
  // The layout of each input, in input order (null: every input is plain).
  const TensorLayout* input_layouts = nullptr;
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

  // The layout of output `output` (fixed at creation; plain unless the kernel says so).
  virtual TensorLayout output_layout(int output) const { return {}; }
  // True when input `input` may be handed over in layout `kind`; otherwise the executor
  // converts it to plain first.
  virtual bool accepts_layout(int input, LayoutKind kind) const { return kind == LayoutKind::kPlain; }
  // True when output element i is a function of the inputs' elements at index i alone, all
  // of one shape: the kernel then runs unchanged on any layout its inputs share, and the
  // executor hands such inputs over as they are and gives the output their layout.
  virtual bool elementwise() const { return false; }
  // For a kernel whose output layout follows its inputs' (a Concat of channel-blocked
  // tensors): the layout of its output when its inputs arrive in `inputs` (planned once;
  // constants and graph inputs are plain), or nullopt to be given plain inputs and make
  // output_layout(). With a layout, Run gets every input as it is (ctx.input_layouts).
  virtual std::optional<TensorLayout> layout_for_inputs(absl::Span<const TensorLayout> inputs) const {
    return std::nullopt;
  }
};

// Creates the kernel for `node`, parsing its attributes once. Unsupported attribute
// values are an UnimplementedError saying which.
using KernelFactory = absl::StatusOr<std::unique_ptr<Kernel>> (*)(const ir::Node& node);

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_KERNEL_H_
