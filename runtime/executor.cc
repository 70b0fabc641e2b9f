#include "runtime/executor.h"

#include <atomic>
#include <chrono>
#include <optional>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "runtime/int8/float_chain_fusion.h"
#include "runtime/int8/qdq_lowering.h"
#include "runtime/onednn/onednn_engine.h"

namespace qfuse::runtime {
namespace {

// Pure operators that shape arithmetic is made of: their outputs depend only on their inputs'
// values (no randomness, no state).
bool IsPureShapeArithmetic(const std::string& op) {
  static const absl::flat_hash_set<std::string>* const ops = new absl::flat_hash_set<std::string>{
      "Abs",       "Add",     "And",     "Cast",       "Ceil",      "Concat",  "ConstantOfShape", "Div",
      "Equal",     "Expand",  "Flatten", "Floor",      "Gather",    "Greater", "Identity",        "Less",
      "Max",       "Min",     "Mod",     "Mul",        "Neg",       "Not",     "Or",              "Range",
      "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSum", "Reshape", "Slice",   "Sqrt",            "Squeeze",
      "Sub",       "Tile",    "Transpose", "Unsqueeze", "Where"};
  return ops->contains(op);
}

// Outputs of shape arithmetic kept between runs hold at most this many elements.
constexpr int64_t kMaxMemoElements = 1024;

}  // namespace

namespace {
std::atomic<int64_t> live_executors{0};
}  // namespace

Executor::TrimBufferCacheOnExit::TrimBufferCacheOnExit() { live_executors.fetch_add(1); }

Executor::TrimBufferCacheOnExit::~TrimBufferCacheOnExit() {
  if (live_executors.fetch_sub(1) == 1) ir::TrimTensorBufferCache();
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(const ir::Graph& given, const ExecutorOptions& options) {
  QFUSE_RETURN_IF_ERROR(given.Verify());
  const KernelRegistry& registry = options.registry != nullptr ? *options.registry : DefaultKernelRegistry();
  std::unique_ptr<ir::Graph> lowered;
  if (options.integer_kernels && int8::HasQdqNodes(given)) {
    lowered = given.Clone();
    QFUSE_RETURN_IF_ERROR(ir::ExpandUnits(lowered.get()));
    int8::LoweringOptions lowering;
    lowering.mode = options.requantize_mode;
    lowering.fold_clamps = options.fold_clamps;
    QFUSE_RETURN_IF_ERROR(int8::LowerQdqToInteger(lowered.get(), lowering).status());
  } else if (options.fuse_float_chains && !int8::HasQdqNodes(given) && int8::HasFloatChainAnchor(given)) {
    lowered = given.Clone();
    QFUSE_ASSIGN_OR_RETURN(int8::FloatChainStats fused, int8::FuseFloatChains(lowered.get()));
    if (fused.layer_norms + fused.gelus + fused.channel_affines == 0) lowered.reset();  // nothing fused: run the graph given
  }
  const ir::Graph& graph = lowered != nullptr ? *lowered : given;
  std::unique_ptr<Executor> exec(
      new Executor(std::move(lowered), graph, options.num_threads, options.memoize_shape_arithmetic));
  // Kernels made below may make oneDNN primitives, which keep the thread count in force.
  onednn::UseThreadsOf(exec->pool_);
  absl::flat_hash_map<const ir::Value*, int> slot_of;
  auto slot = [&](const ir::Value* v) {
    auto [it, inserted] = slot_of.try_emplace(v, static_cast<int>(exec->slot_values_.size()));
    if (inserted) exec->slot_values_.push_back(v);
    return it->second;
  };
  for (const ir::Value* in : graph.inputs()) exec->input_slots_.push_back(slot(in));
  for (const ir::Value* c : graph.constants()) exec->constant_slots_.push_back(slot(c));
  QFUSE_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, graph.TopologicalOrder());
  std::vector<int> last_reader;  // slot -> step index
  std::vector<char> shape_value;  // slot -> computed by shape arithmetic (Step::shape_root / shape_only)
  for (const ir::Node* node : order) {
    KernelFactory factory = registry.Find(*node);
    if (factory == nullptr) {
      return absl::UnimplementedError(absl::StrCat(node->Describe(), ": no kernel for this operator"));
    }
    absl::StatusOr<std::unique_ptr<Kernel>> kernel = factory(*node);
    if (!kernel.ok()) {
      return absl::Status(kernel.status().code(), absl::StrCat(node->Describe(), ": ", kernel.status().message()));
    }
    Step step;
    step.node = node;
    step.kernel = *std::move(kernel);
    for (const ir::Value* in : node->inputs()) step.input_slots.push_back(in == nullptr ? -1 : slot(in));
    for (const ir::Value* out : node->outputs()) step.output_slots.push_back(out == nullptr ? -1 : slot(out));
    exec->slot_layouts_.resize(exec->slot_values_.size());
    // An elementwise kernel whose inputs all share one non-plain layout keeps it; another
    // kernel may take its inputs' layouts as they are (Kernel::layout_for_inputs).
    std::optional<TensorLayout> shared;
    if (step.kernel->elementwise()) {
      for (int s : step.input_slots) {
        if (s < 0) continue;
        const TensorLayout& l = exec->slot_layouts_[s];
        if (!shared.has_value()) shared = l;
        if (l.kind != shared->kind || l.channels != shared->channels) shared = TensorLayout{};
      }
      if (shared.has_value() && shared->kind == LayoutKind::kPlain) shared.reset();
    } else {
      std::vector<TensorLayout> given;
      for (int s : step.input_slots) given.push_back(s < 0 ? TensorLayout{} : exec->slot_layouts_[s]);
      shared = step.kernel->layout_for_inputs(given);
    }
    step.pass_layout = shared.has_value();
    step.shape_root = node->domain().empty() && (node->op_type() == "Shape" || node->op_type() == "Size");
    if (!step.shape_root && node->domain().empty() && IsPureShapeArithmetic(node->op_type()) &&
        !node->inputs().empty()) {
      step.shape_only = true;
      shape_value.resize(exec->slot_values_.size());
      for (int s : step.input_slots) {
        if (s >= 0 && !exec->slot_values_[s]->is_constant() && !shape_value[s]) step.shape_only = false;
      }
    }
    if (step.shape_root || step.shape_only) {
      exec->shape_arithmetic_nodes_ += step.shape_only;
      shape_value.resize(exec->slot_values_.size());
      for (int s : step.output_slots) {
        if (s >= 0) shape_value[s] = 1;
      }
    }
    for (size_t o = 0; o < step.output_slots.size(); ++o) {
      if (step.output_slots[o] >= 0) {
        exec->slot_layouts_[step.output_slots[o]] =
            step.pass_layout ? *shared : step.kernel->output_layout(static_cast<int>(o));
      }
    }
    exec->steps_.push_back(std::move(step));
  }
  for (const ir::Value* out : graph.outputs()) exec->output_slots_.push_back(slot(out));
  exec->slot_layouts_.resize(exec->slot_values_.size());
  exec->memo_.resize(exec->slot_values_.size());
  // Lifetime plan: an intermediate is freed right after its last reader runs.
  last_reader.assign(exec->slot_values_.size(), -1);
  for (size_t s = 0; s < exec->steps_.size(); ++s) {
    for (int in : exec->steps_[s].input_slots) {
      if (in >= 0) last_reader[in] = static_cast<int>(s);
    }
  }
  for (size_t v = 0; v < exec->slot_values_.size(); ++v) {
    const ir::Value* value = exec->slot_values_[v];
    if (value->is_graph_output() || value->is_constant() || value->is_graph_input()) continue;
    if (last_reader[v] >= 0) exec->steps_[last_reader[v]].free_after.push_back(static_cast<int>(v));
  }
  // Outputs nobody reads are freed right after their producer.
  for (size_t s = 0; s < exec->steps_.size(); ++s) {
    for (int out : exec->steps_[s].output_slots) {
      if (out >= 0 && last_reader[out] < 0 && !exec->slot_values_[out]->is_graph_output()) {
        exec->steps_[s].free_after.push_back(out);
      }
    }
  }
  return exec;
}

absl::StatusOr<std::vector<NamedTensor>> Executor::Run(const std::vector<NamedTensor>& inputs,
                                                       const RunOptions& options) {
  std::vector<Tensor> owned(slot_values_.size());
  std::vector<const Tensor*> view(slot_values_.size(), nullptr);
  for (int s : constant_slots_) view[s] = slot_values_[s]->initializer();
  for (size_t i = 0; i < input_slots_.size(); ++i) {
    const ir::Value* in = slot_values_[input_slots_[i]];
    const NamedTensor* bound = nullptr;
    for (const NamedTensor& t : inputs) {
      if (t.name == in->name()) bound = &t;
    }
    if (bound == nullptr) return absl::InvalidArgumentError(absl::StrCat("graph input '", in->name(), "' is not bound"));
    if (bound->tensor.dtype() != in->type().dtype) {
      return absl::InvalidArgumentError(absl::StrCat("graph input '", in->name(), "': expected ",
                                                     ir::DataTypeName(in->type().dtype), ", got ",
                                                     ir::DataTypeName(bound->tensor.dtype())));
    }
    const ir::Shape& shape = in->type().shape;
    if (shape.rank_known) {
      bool ok = shape.rank() == bound->tensor.rank();
      for (int64_t d = 0; ok && d < shape.rank(); ++d) {
        ok = !shape.dims[d].is_known() || shape.dims[d].value == bound->tensor.dims()[d];
      }
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat("graph input '", in->name(), "': expected shape ",
                                                       shape.ToString(), ", got ",
                                                       ir::DimsToString(bound->tensor.dims())));
      }
    }
    view[input_slots_[i]] = &bound->tensor;
  }
  KernelContext ctx{&pool_};
  onednn::UseThreadsOf(pool_);  // for every oneDNN primitive made or run below
  int64_t live = 0;
  peak_bytes_ = 0;
  // Plain copies of values in another layout, made once when a reader needs them.
  std::vector<Tensor> plain(slot_values_.size());
  auto plain_view = [&](int s) -> absl::StatusOr<const Tensor*> {
    if (slot_layouts_[s].kind == LayoutKind::kPlain) return view[s];
    if (plain[s].dtype() == ir::DataType::kUndefined) {
      QFUSE_ASSIGN_OR_RETURN(plain[s], onednn::ToPlain(pool_, *view[s], slot_layouts_[s]));
      live += static_cast<int64_t>(plain[s].byte_size());
    }
    return &plain[s];
  };
  // Frees a slot whose last reader has run, or hands it to RunOptions::kept.
  auto release = [&](int s) -> absl::Status {
    const ir::Value& value = *slot_values_[s];
    if (options.kept != nullptr && view[s] != nullptr && value.producer() != nullptr && options.keep &&
        options.keep(value, *view[s])) {
      QFUSE_ASSIGN_OR_RETURN(const Tensor* t, plain_view(s));
      peak_bytes_ = std::max(peak_bytes_, live);  // with the plain copy of a blocked value
      Tensor& whole = t == &plain[s] ? plain[s] : owned[s];
      live -= static_cast<int64_t>(owned[s].byte_size() + plain[s].byte_size());
      // A memoized value (shape arithmetic) is not owned by this run: copied.
      (*options.kept)[value.name()] = t == &whole ? std::move(whole) : *t;
    } else {
      live -= static_cast<int64_t>(owned[s].byte_size() + plain[s].byte_size());
    }
    owned[s] = Tensor();
    plain[s] = Tensor();
    view[s] = nullptr;
    return absl::OkStatus();
  };
  std::vector<const Tensor*> in_ptrs;
  std::vector<TensorLayout> in_layouts;
  std::vector<Tensor> outs;
  // same[s]: the value equals memo_[s] (constants count as equal to themselves).
  std::unique_lock<std::mutex> memo_lock(memo_mu_, std::try_to_lock);
  const bool use_memo = memoize_ && memo_lock.owns_lock();
  // A Run that stops part way may have kept a node's new inputs but not its new outputs.
  bool completed = false;
  absl::Cleanup forget_on_error = [&] {
    if (use_memo && !completed) memo_.assign(memo_.size(), Tensor());
  };
  std::vector<char> same(slot_values_.size(), 0);
  for (int s : constant_slots_) same[s] = 1;
  for (Step& step : steps_) {
    const auto step_start = std::chrono::steady_clock::now();
    bool reuse = use_memo && step.shape_only;
    for (size_t i = 0; reuse && i < step.input_slots.size(); ++i) {
      reuse = step.input_slots[i] < 0 || same[step.input_slots[i]];
    }
    for (size_t o = 0; reuse && o < step.output_slots.size(); ++o) {
      const int s = step.output_slots[o];
      reuse = s >= 0 && memo_[s].dtype() != ir::DataType::kUndefined;
    }
    if (reuse) {  // every input as in the last Run: so are the outputs
      for (int s : step.output_slots) {
        view[s] = &memo_[s];
        same[s] = 1;
        if (options.observer) options.observer(*slot_values_[s], memo_[s]);
      }
      if (options.node_seconds != nullptr) {
        options.node_seconds->emplace_back(
            step.node, std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count());
      }
      for (int s : step.free_after) QFUSE_RETURN_IF_ERROR(release(s));
      continue;
    }
    in_ptrs.clear();
    in_layouts.clear();
    for (size_t i = 0; i < step.input_slots.size(); ++i) {
      const int s = step.input_slots[i];
      if (s < 0 || step.pass_layout || step.kernel->accepts_layout(static_cast<int>(i), slot_layouts_[s].kind)) {
        in_ptrs.push_back(s < 0 ? nullptr : view[s]);
        in_layouts.push_back(s < 0 ? TensorLayout{} : slot_layouts_[s]);
      } else {
        QFUSE_ASSIGN_OR_RETURN(const Tensor* t, plain_view(s));
        in_ptrs.push_back(t);
        in_layouts.push_back(TensorLayout{});
      }
    }
    ctx.input_layouts = in_layouts.data();
    outs.assign(step.output_slots.size(), Tensor());
    absl::Status status = step.kernel->Run(ctx, in_ptrs, absl::MakeSpan(outs));
    if (options.node_seconds != nullptr) {
      options.node_seconds->emplace_back(
          step.node, std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count());
    }
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat(step.node->Describe(), ": ", status.message()));
    }
    for (size_t o = 0; o < outs.size(); ++o) {
      const int s = step.output_slots[o];
      if (s < 0) continue;
      owned[s] = std::move(outs[o]);
      view[s] = &owned[s];
      live += static_cast<int64_t>(owned[s].byte_size());
      if (use_memo && (step.shape_root || step.shape_only)) {
        const bool keep = owned[s].num_elements() <= kMaxMemoElements && slot_layouts_[s].kind == LayoutKind::kPlain;
        same[s] = keep && memo_[s].dtype() != ir::DataType::kUndefined && memo_[s].BitwiseEqual(owned[s]);
        if (!same[s]) memo_[s] = keep ? owned[s] : Tensor();
      }
      if (options.observer) {
        QFUSE_ASSIGN_OR_RETURN(const Tensor* t, plain_view(s));
        options.observer(*slot_values_[s], *t);
      }
    }
    peak_bytes_ = std::max(peak_bytes_, live);
    for (int s : step.free_after) QFUSE_RETURN_IF_ERROR(release(s));
  }
  completed = true;
  std::vector<NamedTensor> results;
  for (int s : output_slots_) {
    const ir::Value* v = slot_values_[s];
    if (slot_layouts_[s].kind != LayoutKind::kPlain) {
      QFUSE_RETURN_IF_ERROR(plain_view(s).status());
      results.push_back({v->name(), std::move(plain[s])});
      continue;
    }
    // An output may be a constant or an input passed straight through.
    results.push_back({v->name(), owned[s].dtype() != ir::DataType::kUndefined ? std::move(owned[s]) : *view[s]});
  }
  return results;
}

}  // namespace qfuse::runtime
