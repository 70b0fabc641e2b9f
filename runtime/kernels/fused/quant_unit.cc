#include "runtime/cpu_isa.h"
#include "runtime/kernels/fused/quant_unit.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "runtime/kernels/linalg/linalg.h"

namespace qfuse::runtime::kernels {
namespace {

class QuantUnitKernel : public Kernel {
 public:
  QuantUnitKernel(ir::UnitSpec spec, std::unique_ptr<Kernel> base)
      : spec_(std::move(spec)), base_(std::move(base)), bias_after_(ir::BiasFollowsBase(spec_.base_op)) {}

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
        ir::ApplyUnitActivation(spec_, absl::MakeSpan(y + begin, end - begin), IsaAllowed(Isa::kAvx2));
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
  std::unique_ptr<Kernel> base_;
  bool bias_after_;  // MatMul: the bias is added here, not by the base kernel
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQuantUnitKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(ir::UnitSpec spec, ir::ReadUnitSpec(node));
  if (node.output(0)->type().dtype != ir::DataType::kFloat32 && node.output(0)->type().dtype != ir::DataType::kUndefined) {
    return absl::UnimplementedError("float unit kernel needs FLOAT tensors");
  }
  // The base op's kernel, from the unit node itself: the linalg factories read the base op's
  // attributes, which the unit keeps, and x's and w's types (linalg.h).
  absl::StatusOr<std::unique_ptr<Kernel>> base;
  switch (spec.base_op) {
    case ir::UnitBaseOp::kConv: base = CreateConvKernel(node); break;
    case ir::UnitBaseOp::kConvTranspose: base = CreateConvTransposeKernel(node); break;
    case ir::UnitBaseOp::kGemm: base = CreateGemmKernel(node); break;
    case ir::UnitBaseOp::kMatMul: base = CreateMatMulKernel(node); break;
  }
  QFUSE_RETURN_IF_ERROR(base.status());
  return std::unique_ptr<Kernel>(new QuantUnitKernel(std::move(spec), *std::move(base)));
}

}  // namespace qfuse::runtime::kernels
