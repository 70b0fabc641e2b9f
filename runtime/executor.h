// Runs a float (or int8 QDQ) graph: Prepare once (kernels created, execution order and
// value lifetimes planned), then Run many times with inputs bound by name.
#ifndef QFUSE_RUNTIME_EXECUTOR_H_
#define QFUSE_RUNTIME_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "numerics/requantize.h"
#include "runtime/kernel.h"
#include "runtime/kernel_registry.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime {

struct ExecutorOptions {
  int num_threads = 2;
  const KernelRegistry* registry = nullptr;  // nullptr: DefaultKernelRegistry()
  // A graph with QuantizeLinear / DequantizeLinear runs on integer kernels: the executor
  // works on its own copy (units expanded) where QDQ groups are lowered to qfuse's integer
  // ops (runtime/int8/qdq_lowering.h). false: simulated quantization (float ops between
  // DequantizeLinear and QuantizeLinear), as the graph is written.
  bool integer_kernels = true;
  // Requantization of the integer kernels (numerics/requantize.h).
  numerics::RequantizeMode requantize_mode = numerics::RequantizeMode::kOnnx;
  // Fold a requantizing Relu / Clip into the integer unit before it (qdq_lowering.h; the
  // same bytes). false keeps them separate (tests compare the two; benchmarks time them).
  bool fold_clamps = true;
  // Run the pre-opset-17 LayerNorm and pre-opset-20 GELU chains of a float graph (one without
  // QuantizeLinear / DequantizeLinear; the lowering fuses them in QDQ graphs) as one op each,
  // in onnxruntime's fused arithmetic (runtime/int8/float_chain_fusion.h), as onnxruntime does
  // to fp32 models. Their intermediates are then not computed: runs that observe every value
  // (calibration, per-layer analysis, the fusion equivalence check) set this false.
  bool fuse_float_chains = true;
  // Keep the shape arithmetic's small values between runs and skip a node whose inputs equal
  // the last run's (see Executor::memo_). false: every node runs every time. A skipped node's
  // time in RunOptions::node_seconds is that of the check.
  bool memoize_shape_arithmetic = true;
};

using ir::NamedTensor;

struct RunOptions {
  // Called once for every value a node produces, right after it is computed (before
  // it may be freed). Used by calibration and per-layer error analysis.
  std::function<void(const ir::Value& value, const Tensor& tensor)> observer;
  // With `kept`: every value a node produces that `keep` accepts is moved into `kept` (by value
  // name, in the plain layout) when the run no longer needs it, instead of being freed, so a
  // caller keeps activations without copying them. Graph outputs are returned, not kept.
  // `keep` sees the tensor in the layout its producer wrote (blocked for some int8 units).
  std::function<bool(const ir::Value& value, const Tensor& tensor)> keep;
  std::map<std::string, Tensor>* kept = nullptr;
  // When set, receives the wall time of every node, in execution order.
  std::vector<std::pair<const ir::Node*, double>>* node_seconds = nullptr;
};

class Executor {
 public:
  // Prepares `graph` (which must outlive the executor): verifies it, lowers QDQ groups
  // to integer kernels (see ExecutorOptions), creates a kernel per node and plans when
  // each intermediate can be freed.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(const ir::Graph& graph, const ExecutorOptions& options = {});

  // Runs with every graph input bound by name; returns the graph outputs in order.
  absl::StatusOr<std::vector<NamedTensor>> Run(const std::vector<NamedTensor>& inputs,
                                               const RunOptions& options = {});

  // Largest number of bytes held by live intermediates and outputs during the last Run
  // (constants and caller-owned inputs excluded).
  int64_t peak_activation_bytes() const { return peak_bytes_; }
  // Nodes of shape arithmetic that a run skips while the shapes they depend on stay the same
  // (see memo_; Shape / Size nodes themselves always run).
  int64_t shape_arithmetic_nodes() const { return shape_arithmetic_nodes_; }
  const ThreadPool& pool() const { return pool_; }
  // The graph that runs: the caller's, or the executor's lowered copy. Observers and
  // node timings refer to its values and nodes.
  const ir::Graph& graph() const { return graph_; }

 private:
  struct Step {
    const ir::Node* node;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> input_slots;   // -1 for omitted inputs
    std::vector<int> output_slots;  // -1 for omitted outputs
    std::vector<int> free_after;    // slots whose last reader is this step
    // Inputs handed over in the layouts they have: an elementwise kernel on its inputs' shared
    // layout, or a kernel whose Kernel::layout_for_inputs took them.
    bool pass_layout = false;
    // Shape arithmetic (see memo_ below): a Shape / Size node (a root, always run), or a pure
    // op whose every input is a constant or the output of shape arithmetic.
    bool shape_root = false;
    bool shape_only = false;
  };

  Executor(std::unique_ptr<ir::Graph> owned, const ir::Graph& graph, int num_threads, bool memoize)
      : owned_graph_(std::move(owned)), graph_(graph), pool_(num_threads), memoize_(memoize) {}

  // Declared first, so destroyed last: when the last live executor goes, trims the tensor
  // buffer cache once every tensor of it is freed (not while another executor still runs).
  struct TrimBufferCacheOnExit {
    TrimBufferCacheOnExit();
    ~TrimBufferCacheOnExit();
  };
  TrimBufferCacheOnExit trim_buffer_cache_;
  std::unique_ptr<ir::Graph> owned_graph_;  // the lowered copy, when there is one
  const ir::Graph& graph_;
  ThreadPool pool_;
  std::vector<Step> steps_;
  std::vector<const ir::Value*> slot_values_;  // slot -> value
  std::vector<TensorLayout> slot_layouts_;  // slot -> its producer's output_layout
  std::vector<int> input_slots_;               // per graph input
  std::vector<int> output_slots_;              // per graph output
  std::vector<int> constant_slots_;
  int64_t peak_bytes_ = 0;
  // The shape arithmetic of dynamically shaped exports (Shape -> Gather -> Unsqueeze -> Concat
  // -> Reshape, hundreds of nodes in ShuffleNetV2 or ViT): each small output of it from the
  // last Run, by slot. A shape-only node whose inputs all equal the last Run's takes its
  // outputs from here instead of running. One Run at a time uses it; a concurrent Run
  // computes everything.
  bool memoize_ = true;
  int64_t shape_arithmetic_nodes_ = 0;
  std::mutex memo_mu_;
  std::vector<Tensor> memo_;  // slot -> the value; kUndefined when not kept
};

}  // namespace qfuse::runtime

#endif  // QFUSE_RUNTIME_EXECUTOR_H_
