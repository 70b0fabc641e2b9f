// Variadic Sum, Max and Min over n >= 1 inputs with n-ary numpy broadcasting. Real
// numeric types are computed natively (integer Sum wraps around); FLOAT16 and
// BFLOAT16 are widened to float, combined, and rounded back (ties to even).
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/float16.h"
#include "runtime/kernels/elementwise/binary_loop.h"
#include "runtime/kernels/elementwise/dispatch.h"
#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/kernel_util.h"

namespace qfuse::runtime::kernels {
namespace {

enum class VariadicOp { kSum, kMax, kMin };

Tensor WidenToFloat(const Tensor& t) {
  Tensor out(DataType::kFloat32, t.dims());  // t's shape is already valid
  const uint16_t* in = t.data<uint16_t>();
  float* o = out.data<float>();
  const bool half = t.dtype() == DataType::kFloat16;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    o[i] = half ? ir::HalfBitsToFloat(in[i]) : ir::BFloat16BitsToFloat(in[i]);
  return out;
}

Tensor NarrowFromFloat(const Tensor& t, DataType dtype) {
  Tensor out(dtype, t.dims());  // t's shape is already valid
  const float* in = t.data<float>();
  uint16_t* o = out.data<uint16_t>();
  const bool half = dtype == DataType::kFloat16;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    o[i] = half ? ir::DoubleToHalfBits(in[i]) : ir::FloatToBFloat16Bits(in[i]);
  return out;
}

class VariadicKernel : public Kernel {
 public:
  explicit VariadicKernel(VariadicOp op) : op_(op) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    if (inputs.empty()) return absl::InvalidArgumentError("needs at least one input");
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, inputs.size()));
    const DataType dtype = inputs[0]->dtype();
    for (const Tensor* t : inputs) QFUSE_RETURN_IF_ERROR(RequireSameType(*inputs[0], *t));
    if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
      std::vector<Tensor> wide;
      wide.reserve(inputs.size());
      for (const Tensor* t : inputs) wide.push_back(WidenToFloat(*t));
      std::vector<const Tensor*> ptrs;
      for (const Tensor& t : wide) ptrs.push_back(&t);
      Tensor out;
      QFUSE_RETURN_IF_ERROR(Combine(ctx, ptrs, &out));
      outputs[0] = NarrowFromFloat(out, dtype);
      return absl::OkStatus();
    }
    return Combine(ctx, inputs, &outputs[0]);
  }

 private:
  absl::Status Combine(const KernelContext& ctx, absl::Span<const Tensor* const> inputs, Tensor* result) const {
    std::vector<int64_t> out_dims = inputs[0]->dims();
    for (size_t k = 1; k < inputs.size(); ++k) {
      QFUSE_ASSIGN_OR_RETURN(out_dims, BroadcastShapes(out_dims, inputs[k]->dims()));
    }
    return DispatchNumeric(inputs[0]->dtype(), "input", [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      switch (op_) {
        case VariadicOp::kSum:
          return Fold<T>(ctx, inputs, out_dims, result, [](T a, T b) { return WrapAdd<T>(a, b); });
        case VariadicOp::kMax: return Fold<T>(ctx, inputs, out_dims, result, [](T a, T b) { return a < b ? b : a; });
        case VariadicOp::kMin: return Fold<T>(ctx, inputs, out_dims, result, [](T a, T b) { return b < a ? b : a; });
      }
      return absl::InternalError("unknown variadic op");
    });
  }

  // result = fn(...fn(fn(in0, in1), in2)..., in_{n-1}), broadcast to out_dims.
  template <typename T, typename Fn>
  static absl::Status Fold(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                           const std::vector<int64_t>& out_dims, Tensor* result, Fn fn) {
    QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(inputs[0]->dtype(), out_dims));
    T* po = out.data<T>();
    size_t next = 1;
    if (inputs.size() >= 2) {
      QFUSE_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(inputs[0]->dims(), inputs[1]->dims()));
      if (plan.out_dims == out_dims) {
        BinaryLoop(*ctx.pool, plan, inputs[0]->data<T>(), inputs[1]->data<T>(), po, fn);
        next = 2;
      }
    }
    if (next == 1) {
      QFUSE_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(out_dims, inputs[0]->dims()));
      BinaryLoop(*ctx.pool, plan, po, inputs[0]->data<T>(), po, [](T, T b) { return b; });
    }
    for (size_t k = next; k < inputs.size(); ++k) {
      // In place: the output has full extent, so it advances in step with itself.
      QFUSE_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(out_dims, inputs[k]->dims()));
      BinaryLoop(*ctx.pool, plan, po, inputs[k]->data<T>(), po, fn);
    }
    *result = std::move(out);
    return absl::OkStatus();
  }

  VariadicOp op_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateVariadicKernel(const ir::Node& node) {
  const std::string& op = node.op_type();
  if (op == "Sum") return std::unique_ptr<Kernel>(new VariadicKernel(VariadicOp::kSum));
  if (op == "Max") return std::unique_ptr<Kernel>(new VariadicKernel(VariadicOp::kMax));
  if (op == "Min") return std::unique_ptr<Kernel>(new VariadicKernel(VariadicOp::kMin));
  return absl::UnimplementedError(absl::StrCat("variadic operator ", op));
}

}  // namespace qfuse::runtime::kernels
