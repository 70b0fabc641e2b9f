// Comparisons Equal, Less, Greater (numpy broadcasting, any real numeric type, BOOL output),
// Not (BOOL) and Where(condition, x, y) (three-way broadcasting, any element type). Exporters use them
// on small shape tensors (torch's `expand(n, -1, -1)` becomes Where(Equal(shape, -1), 1, shape)),
// so Where is a plain indexed loop rather than a vectorised one.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/elementwise/binary_loop.h"
#include "runtime/kernels/elementwise/dispatch.h"
#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/kernel_util.h"

namespace qfuse::runtime::kernels {
namespace {

enum class CompareOp { kEqual, kLess, kGreater };

class CompareKernel : public Kernel {
 public:
  explicit CompareKernel(CompareOp op) : op_(op) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    QFUSE_RETURN_IF_ERROR(RequireSameType(a, b));
    QFUSE_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(a.dims(), b.dims()));
    QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(ir::DataType::kBool, plan.out_dims));
    QFUSE_RETURN_IF_ERROR(DispatchNumeric(a.dtype(), "input", [&](auto tag) {
      using T = decltype(tag);
      bool* y = out.data<bool>();
      switch (op_) {
        case CompareOp::kEqual: BinaryLoop(*ctx.pool, plan, a.data<T>(), b.data<T>(), y, [](T p, T q) { return p == q; }); break;
        case CompareOp::kLess: BinaryLoop(*ctx.pool, plan, a.data<T>(), b.data<T>(), y, [](T p, T q) { return p < q; }); break;
        case CompareOp::kGreater: BinaryLoop(*ctx.pool, plan, a.data<T>(), b.data<T>(), y, [](T p, T q) { return p > q; }); break;
      }
      return absl::OkStatus();
    }));
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }

 private:
  CompareOp op_;
};

class NotKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    if (x.dtype() != ir::DataType::kBool) {
      return absl::InvalidArgumentError(absl::StrCat("Not of ", ir::DataTypeName(x.dtype()), ", not BOOL"));
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(ir::DataType::kBool, x.dims()));
    const bool* a = x.data<bool>();
    bool* y = out.data<bool>();
    for (int64_t i = 0; i < x.num_elements(); ++i) y[i] = !a[i];
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }
};

class WhereKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 3));
    const Tensor& c = *inputs[0];
    const Tensor& x = *inputs[1];
    const Tensor& y = *inputs[2];
    if (c.dtype() != ir::DataType::kBool) {
      return absl::InvalidArgumentError(absl::StrCat("condition is ", ir::DataTypeName(c.dtype()), ", not BOOL"));
    }
    QFUSE_RETURN_IF_ERROR(RequireSameType(x, y, "X and Y"));
    QFUSE_ASSIGN_OR_RETURN(const std::vector<int64_t> cx_dims, BroadcastShapes(c.dims(), x.dims()));
    QFUSE_ASSIGN_OR_RETURN(const std::vector<int64_t> out_dims, BroadcastShapes(cx_dims, y.dims()));
    QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(x.dtype(), out_dims));
    const std::vector<int64_t> sc = BroadcastStrides(c.dims(), out_dims);
    const std::vector<int64_t> sx = BroadcastStrides(x.dims(), out_dims);
    const std::vector<int64_t> sy = BroadcastStrides(y.dims(), out_dims);
    const size_t esize = ir::ElementSize(x.dtype());
    const bool* cd = c.data<bool>();
    const uint8_t* xd = static_cast<const uint8_t*>(x.raw_data());
    const uint8_t* yd = static_cast<const uint8_t*>(y.raw_data());
    uint8_t* od = static_cast<uint8_t*>(out.raw_data());
    std::vector<int64_t> index(out_dims.size(), 0);
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      int64_t oc = 0, ox = 0, oy = 0;
      for (size_t d = 0; d < index.size(); ++d) {
        oc += index[d] * sc[d];
        ox += index[d] * sx[d];
        oy += index[d] * sy[d];
      }
      std::memcpy(od + i * esize, cd[oc] ? xd + ox * esize : yd + oy * esize, esize);
      for (size_t d = index.size(); d-- > 0;) {  // next multi-index
        if (++index[d] < out_dims[d]) break;
        index[d] = 0;
      }
    }
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateCompareKernel(const ir::Node& node) {
  const std::string& op = node.op_type();
  if (op == "Equal") return std::unique_ptr<Kernel>(new CompareKernel(CompareOp::kEqual));
  if (op == "Less") return std::unique_ptr<Kernel>(new CompareKernel(CompareOp::kLess));
  if (op == "Greater") return std::unique_ptr<Kernel>(new CompareKernel(CompareOp::kGreater));
  return absl::UnimplementedError(absl::StrCat("comparison operator ", op));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateNotKernel(const ir::Node& node) {
  return std::unique_ptr<Kernel>(new NotKernel());
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateWhereKernel(const ir::Node& node) {
  return std::unique_ptr<Kernel>(new WhereKernel());
}

}  // namespace qfuse::runtime::kernels
