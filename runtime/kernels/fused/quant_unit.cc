#include "runtime/kernels/fused/quant_unit.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/fused_unit.h"
#include "ir/status_macros.h"
#include "runtime/kernels/linalg/linalg.h"

namespace qfuse::runtime::kernels {
namespace {

class QuantUnitKernel : public Kernel {
 public:
  QuantUnitKernel(ir::UnitSpec spec, std::unique_ptr<ir::Graph> base_graph, std::unique_ptr<Kernel> base,
                  bool bias_after)
      : spec_(std::move(spec)), base_graph_(std::move(base_graph)), base_(std::move(base)), bias_after_(bias_after) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    const Tensor* bias = inputs.size() > ir::kUnitBias ? inputs[ir::kUnitBias] : nullptr;
    const Tensor* residual = inputs.size() > ir::kUnitResidual ? inputs[ir::kUnitResidual] : nullptr;
    const Tensor* base_inputs[3] = {inputs[ir::kUnitX], inputs[ir::kUnitW], bias_after_ ? nullptr : bias};
    const size_t n_base = (!bias_after_ && bias != nullptr) ? 3 : 2;
    QFUSE_RETURN_IF_ERROR(base_->Run(ctx, absl::MakeConstSpan(base_inputs, n_base), outputs.subspan(0, 1)));
    Tensor& out = outputs[0];
    float* y = out.data<float>();
    const int64_t n = out.num_elements();
    if (bias_after_ && bias != nullptr) {
      const int64_t cols = out.dims().back();
      if (bias->num_elements() != cols) {
        return absl::InvalidArgumentError(absl::StrCat("bias has ", bias->num_elements(), " values for ", cols, " columns"));
      }
      const float* b = bias->data<float>();
      for (float* row = y; row < y + n; row += cols) {
        for (int64_t j = 0; j < cols; ++j) row[j] += b[j];
      }
    }
    const float* r = nullptr;
    if (residual != nullptr) {
      if (residual->dims() != out.dims()) {
        return absl::InvalidArgumentError(absl::StrCat("residual shape ", ir::DimsToString(residual->dims()),
                                                       " differs from the output's ", ir::DimsToString(out.dims())));
      }
      r = residual->data<float>();
    }
    if (!ir::IsClampActivation(spec_.activation)) {
      ctx.pool->ParallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
        if (r != nullptr) {
          for (int64_t i = begin; i < end; ++i) y[i] += r[i];
        }
        ir::ApplyUnitActivation(spec_, absl::MakeSpan(y + begin, end - begin));
      });
      return absl::OkStatus();
    }
    // A clamp: one branch-free pass (vectorisable), skipped when there is neither residual
    // nor clamp.
    const ir::ClampRange bounds = spec_.ClampBounds();
    const float lo = bounds.lo, hi = bounds.hi;
    if (r == nullptr && spec_.activation == ir::UnitActivation::kNone) return absl::OkStatus();
    ctx.pool->ParallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
      if (r != nullptr) {
        for (int64_t i = begin; i < end; ++i) y[i] = std::min(std::max(y[i] + r[i], lo), hi);
      } else {
        for (int64_t i = begin; i < end; ++i) y[i] = std::min(std::max(y[i], lo), hi);
      }
    });
    return absl::OkStatus();
  }

 private:
  ir::UnitSpec spec_;
  std::unique_ptr<ir::Graph> base_graph_;  // owns the base node the base kernel was made from
  std::unique_ptr<Kernel> base_;
  bool bias_after_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQuantUnitKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(ir::UnitSpec spec, ir::ReadUnitSpec(node));
  // A standalone copy of the base op (same inputs, its own attributes) for its factory.
  auto graph = std::make_unique<ir::Graph>();
  const bool bias_after = ir::BiasFollowsBase(spec.base_op);
  std::vector<ir::Value*> inputs;
  const int n_inputs = bias_after || node.input(ir::kUnitBias) == nullptr ? 2 : 3;
  for (int i = 0; i < n_inputs; ++i) {
    const ir::Value* v = node.input(i);
    ir::Value* copy;
    if (v->is_constant()) {
      QFUSE_ASSIGN_OR_RETURN(copy, graph->AddConstant(v->name(), *v->initializer()));
    } else {
      QFUSE_ASSIGN_OR_RETURN(copy, graph->AddInput(v->name(), v->type()));
    }
    inputs.push_back(copy);
  }
  QFUSE_ASSIGN_OR_RETURN(ir::Node * base, graph->AddNode(ir::UnitBaseOpName(spec.base_op), node.name(), inputs, {node.output(0)->name()},
                                                         ir::BaseOpAttributes(node)));
  absl::StatusOr<std::unique_ptr<Kernel>> kernel;
  switch (spec.base_op) {
    case ir::UnitBaseOp::kConv: kernel = CreateConvKernel(*base); break;
    case ir::UnitBaseOp::kConvTranspose: kernel = CreateConvTransposeKernel(*base); break;
    case ir::UnitBaseOp::kGemm: kernel = CreateGemmKernel(*base); break;
    case ir::UnitBaseOp::kMatMul: kernel = CreateMatMulKernel(*base); break;
  }
  QFUSE_RETURN_IF_ERROR(kernel.status());
  if (node.output(0)->type().dtype != ir::DataType::kFloat32 && node.output(0)->type().dtype != ir::DataType::kUndefined) {
    return absl::UnimplementedError("float unit kernel needs FLOAT tensors");
  }
  return std::unique_ptr<Kernel>(new QuantUnitKernel(spec, std::move(graph), *std::move(kernel), bias_after));
}

}  // namespace qfuse::runtime::kernels
