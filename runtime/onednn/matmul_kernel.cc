#include "runtime/onednn/matmul_kernel.h"

#include <atomic>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/onednn/unit_post_ops.h"

namespace qfuse::runtime::onednn {
namespace {

using dnnl::memory;

std::atomic<int64_t> primitives_made{0};

// One matmul primitive for one number of rows, with or without a residual.
struct MatMulPrimitive {
  dnnl::matmul matmul;
  memory weights;  // packed
  memory::desc src_desc, dst_desc, bias_desc;
};

// y[rows, N] = x[rows, K] * W[K, N] (+ bias) (+ residual) -> activation, where rows is the
// product of x's leading dims.
class OneDnnMatMulUnitKernel : public Kernel {
 public:
  // `weights` and `bias` (null: none) are the graph's initializers, which outlive the kernel.
  OneDnnMatMulUnitKernel(ir::UnitSpec spec, const ir::Tensor* weights, bool weights_transposed, const ir::Tensor* bias,
                         std::unique_ptr<Kernel> native)
      : spec_(std::move(spec)),
        gemm_(spec_.base_op == ir::UnitBaseOp::kGemm),
        weights_(*weights),
        weights_transposed_(weights_transposed),
        bias_(bias),
        native_(std::move(native)),
        k_(weights_.dims()[weights_transposed_ ? 1 : 0]),
        n_(weights_.dims()[weights_transposed_ ? 0 : 1]) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 1));
    const Tensor& x = *inputs[ir::kUnitX];
    const Tensor* residual = inputs.size() > ir::kUnitResidual ? inputs[ir::kUnitResidual] : nullptr;
    if (x.dtype() != ir::DataType::kFloat32 || x.rank() < 2 || (gemm_ && x.rank() != 2) || x.dims().back() != k_ ||
        k_ == 0) {
      return native_->Run(ctx, inputs, outputs);  // the hand-written kernel reports it
    }
    std::vector<int64_t> y_dims = x.dims();
    y_dims.back() = n_;
    const int64_t rows = x.num_elements() / k_;
    if (residual != nullptr && (residual->dtype() != ir::DataType::kFloat32 || residual->dims() != y_dims)) {
      return absl::InvalidArgumentError(absl::StrCat("residual shape ", ir::DimsToString(residual->dims()),
                                                     " differs from the output's ", ir::DimsToString(y_dims)));
    }
    UseThreadsOf(*ctx.pool);
    const MatMulPrimitive* found = Find(rows, residual != nullptr);
    if (found == nullptr) return native_->Run(ctx, inputs, outputs);
    const MatMulPrimitive& p = *found;
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::CreateUninitialized(ir::DataType::kFloat32, y_dims));
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(p.src_desc, Engine(), const_cast<void*>(x.raw_data()))},
        {DNNL_ARG_WEIGHTS, p.weights},
        {DNNL_ARG_DST, memory(p.dst_desc, Engine(), y.raw_data())}};
    if (bias_ != nullptr) {
      args.emplace(DNNL_ARG_BIAS, memory(p.bias_desc, Engine(), const_cast<void*>(bias_->raw_data())));
    }
    if (residual != nullptr) {
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                   memory(p.dst_desc, Engine(), const_cast<void*>(residual->raw_data())));
    }
    try {
      p.matmul.execute(Stream(), args);
      Stream().wait();
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN matmul failed: ", e.what()));
    }
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }

 private:
  // The primitive for `rows` rows, made on first use; null when oneDNN refuses it (remembered,
  // so the hand-written kernel runs that shape from then on).
  const MatMulPrimitive* Find(int64_t rows, bool residual) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto key = std::make_pair(rows, residual);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second.get();
    auto p = std::make_unique<MatMulPrimitive>();
    try {
      p->src_desc = memory::desc({rows, k_}, memory::data_type::f32, memory::format_tag::ab);
      p->dst_desc = memory::desc({rows, n_}, memory::data_type::f32, memory::format_tag::ab);
      const memory::desc w_any({k_, n_}, memory::data_type::f32, memory::format_tag::any);
      if (bias_ != nullptr) {
        p->bias_desc = memory::desc({1, n_}, memory::data_type::f32, memory::format_tag::ab);
      }
      dnnl::post_ops ops;
      if (residual) ops.append_binary(dnnl::algorithm::binary_add, p->dst_desc);
      AppendUnitActivation(spec_, &ops);
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->src_desc, w_any, p->bias_desc, p->dst_desc), attr,
                                            Engine());
      p->matmul = dnnl::matmul(pd);
      p->weights = PackedWeights(pd.weights_desc());
    } catch (const dnnl::error&) {
      p.reset();  // refused: the hand-written kernel runs this shape
    }
    if (p != nullptr) primitives_made.fetch_add(1, std::memory_order_relaxed);
    return cache_.emplace(key, std::move(p)).first->second.get();
  }

  // ONNX's [K, N] (Gemm transB: [N, K]) in the format `desc`, packed once per format: row
  // counts whose primitives choose the same format share one copy. Called under mu_.
  memory PackedWeights(const memory::desc& desc) {
    for (const memory& packed : packed_) {
      if (packed.get_desc() == desc) return packed;
    }
    memory plain(
        {{k_, n_}, memory::data_type::f32, weights_transposed_ ? memory::format_tag::ba : memory::format_tag::ab},
        Engine(), const_cast<void*>(weights_.raw_data()));
    memory packed(desc, Engine());
    dnnl::reorder(plain, packed).execute(Stream(), plain, packed);
    Stream().wait();
    packed_.push_back(packed);
    return packed;
  }

  const ir::UnitSpec spec_;
  const bool gemm_;
  const ir::Tensor& weights_;  // plain: packed_ holds the copies oneDNN reads
  const bool weights_transposed_;
  const ir::Tensor* bias_;  // null when absent
  const std::unique_ptr<Kernel> native_;
  const int64_t k_, n_;
  std::mutex mu_;
  std::map<std::pair<int64_t, bool>, std::unique_ptr<MatMulPrimitive>> cache_;  // null: refused
  std::vector<memory> packed_;
};

bool IsFloat(const ir::Value* v) {
  return v->type().dtype == ir::DataType::kFloat32 || v->type().dtype == ir::DataType::kUndefined;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MaybeOneDnnMatMulUnit(const ir::Node& node, const ir::UnitSpec& spec,
                                                              std::unique_ptr<Kernel> native) {
  if (!UseOneDnn() || (spec.base_op != ir::UnitBaseOp::kMatMul && spec.base_op != ir::UnitBaseOp::kGemm)) {
    return native;
  }
  const ir::Value* w = node.input(ir::kUnitW);
  const ir::Value* b = node.inputs().size() > ir::kUnitBias ? node.input(ir::kUnitBias) : nullptr;
  if (w == nullptr || !w->is_constant() || w->initializer()->rank() != 2 ||
      w->initializer()->dtype() != ir::DataType::kFloat32 || !IsFloat(node.input(ir::kUnitX)) ||
      !IsFloat(node.output(0))) {
    return native;
  }
  bool transposed = false;
  if (spec.base_op == ir::UnitBaseOp::kGemm) {
    QFUSE_ASSIGN_OR_RETURN(float alpha, node.attrs().GetFloat("alpha", 1.0f));
    QFUSE_ASSIGN_OR_RETURN(float beta, node.attrs().GetFloat("beta", 1.0f));
    QFUSE_ASSIGN_OR_RETURN(int64_t trans_a, node.attrs().GetInt("transA", 0));
    QFUSE_ASSIGN_OR_RETURN(int64_t trans_b, node.attrs().GetInt("transB", 0));
    if (alpha != 1.0f || (b != nullptr && beta != 1.0f) || trans_a != 0) return native;
    transposed = trans_b != 0;
  }
  const ir::Tensor* weights = w->initializer();
  const int64_t n = weights->dims()[transposed ? 0 : 1];
  const ir::Tensor* bias = nullptr;
  if (b != nullptr) {
    // One value per column: [N] or [1, N] (Gemm's C may broadcast otherwise: hand-written).
    const ir::Tensor* t = b->is_constant() ? b->initializer() : nullptr;
    if (t == nullptr || t->dtype() != ir::DataType::kFloat32 || t->num_elements() != n || t->rank() > 2 ||
        (t->rank() == 2 && t->dims()[0] != 1)) {
      return native;
    }
    bias = t;
  }
  return std::unique_ptr<Kernel>(new OneDnnMatMulUnitKernel(spec, weights, transposed, bias, std::move(native)));
}

int64_t OneDnnMatMulPrimitives() { return primitives_made.load(std::memory_order_relaxed); }

}  // namespace qfuse::runtime::onednn
