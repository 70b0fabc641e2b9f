// Binary kernels with numpy broadcasting: Add, Sub, Mul, Div (every real numeric
// type; integer Add/Sub/Mul wrap around, integer Div truncates toward zero and gives
// 0 for a zero divisor), Mod (fmod = 0: the remainder takes the divisor's sign, as Python's
// %, integers only; fmod = 1: the dividend's, as C's fmod; an integer zero divisor gives 0, as
// numpy), Pow (base type decides the output type; the exponent may be another type, computed
// in double) and PRelu (slope broadcast onto x).
#include <cmath>
#include <optional>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/float16.h"
#include "runtime/kernels/elementwise/binary_loop.h"
#include "runtime/kernels/elementwise/dispatch.h"
#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/kernel_util.h"

namespace qfuse::runtime::kernels {
namespace {

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMod, kPow, kPRelu };

template <typename T>
T DivOp(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return WrapSub<T>(0, a);  // avoids INT_MIN / -1
    }
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}

// ONNX Mod: with `fmod` the remainder of truncated division (sign of a), else of floored
// division (sign of b; integers only, checked when the kernel runs).
template <typename T>
T ModOp(T a, T b, bool fmod) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;  // avoids INT_MIN % -1
    }
    const T r = static_cast<T>(a % b);
    if constexpr (std::is_signed_v<T>) {
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) return static_cast<T>(r + b);
    }
    return r;
  } else {
    return static_cast<T>(std::fmod(a, b));
  }
}

template <typename T, typename U>
T PowOp(T a, U b) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
    return std::pow(a, b);
  } else {
    const double r = std::pow(static_cast<double>(a), static_cast<double>(b));
    if constexpr (std::is_integral_v<T>) {
      // Out-of-range results (and NaN) would be undefined in a plain cast.
      if (!(r > static_cast<double>(std::numeric_limits<T>::lowest()) - 1.0 &&
            r < static_cast<double>(std::numeric_limits<T>::max()) + 1.0)) {
        return 0;
      }
    }
    return static_cast<T>(r);
  }
}

class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(BinaryOp op, bool fmod = false) : op_(op), fmod_(fmod) {}

  // Mul of two channel-blocked tensors with the same channels (a convolution's output times a
  // squeeze-excitation gate [N, C, 1, 1]) runs on the blocks as they are: the blocked dims
  // [N, C/B, H, W, B] broadcast against each other as the plain ones do, channel for channel,
  // and each product is the plain kernel's; the padding channels stay zero (0 x finite). The
  // output keeps the layout, so neither input nor the next convolution reorders.
  std::optional<TensorLayout> layout_for_inputs(absl::Span<const TensorLayout> inputs) const override {
    if (op_ != BinaryOp::kMul || inputs.size() != 2) return std::nullopt;
    const TensorLayout& a = inputs[0];
    const TensorLayout& b = inputs[1];
    if (a.kind != LayoutKind::kChannelBlocked || b.kind != LayoutKind::kChannelBlocked || a.channels != b.channels) {
      return std::nullopt;
    }
    return a;
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    if (op_ == BinaryOp::kPow) return RunPow(ctx, a, b, outputs);
    QFUSE_RETURN_IF_ERROR(RequireSameType(a, b));
    QFUSE_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(a.dims(), b.dims()));
    if (op_ == BinaryOp::kMod && a.dtype() == DataType::kFloat16) {
      // fmod's result is exact in any binary format: computed in float, it rounds back to itself.
      if (!fmod_) return absl::InvalidArgumentError("Mod of floating-point values needs fmod = 1");
      QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::CreateUninitialized(a.dtype(), plan.out_dims));  // all written
      BinaryLoop(*ctx.pool, plan, a.data<uint16_t>(), b.data<uint16_t>(), out.data<uint16_t>(),
                 [](uint16_t x, uint16_t y) {
                   return ir::DoubleToHalfBits(std::fmod(ir::HalfBitsToFloat(x), ir::HalfBitsToFloat(y)));
                 });
      outputs[0] = std::move(out);
      return absl::OkStatus();
    }
    if (op_ == BinaryOp::kPRelu && plan.out_dims != a.dims()) {
      return absl::InvalidArgumentError(absl::StrCat("PRelu slope ", ir::DimsToString(b.dims()),
                                                     " does not broadcast to x ", ir::DimsToString(a.dims())));
    }
    return DispatchNumeric(a.dtype(), "input", [&](auto tag) {
      using T = decltype(tag);
      QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::CreateUninitialized(a.dtype(), plan.out_dims));  // all written
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* po = out.data<T>();
      const ThreadPool& pool = *ctx.pool;
      switch (op_) {
        case BinaryOp::kAdd: BinaryLoop(pool, plan, pa, pb, po, [](T x, T y) { return WrapAdd<T>(x, y); }); break;
        case BinaryOp::kSub: BinaryLoop(pool, plan, pa, pb, po, [](T x, T y) { return WrapSub<T>(x, y); }); break;
        case BinaryOp::kMul: BinaryLoop(pool, plan, pa, pb, po, [](T x, T y) { return WrapMul<T>(x, y); }); break;
        case BinaryOp::kDiv: BinaryLoop(pool, plan, pa, pb, po, [](T x, T y) { return DivOp<T>(x, y); }); break;
        case BinaryOp::kMod: {
          const bool fmod = fmod_;
          if (!std::is_integral_v<T> && !fmod) {
            return absl::InvalidArgumentError("Mod of floating-point values needs fmod = 1");
          }
          BinaryLoop(pool, plan, pa, pb, po, [fmod](T x, T y) { return ModOp<T>(x, y, fmod); });
          break;
        }
        case BinaryOp::kPRelu:
          BinaryLoop(pool, plan, pa, pb, po, [](T x, T s) { return x < T(0) ? static_cast<T>(s * x) : x; });
          break;
        case BinaryOp::kPow: break;
      }
      outputs[0] = std::move(out);
      return absl::OkStatus();
    });
  }

 private:
  absl::Status RunPow(const KernelContext& ctx, const Tensor& a, const Tensor& b, absl::Span<Tensor> outputs) {
    QFUSE_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(a.dims(), b.dims()));
    auto base_types = [&](auto base_tag) -> absl::Status {
      using T = decltype(base_tag);
      return DispatchPowExponent(b.dtype(), [&](auto exp_tag) {
        using U = decltype(exp_tag);
        QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(a.dtype(), plan.out_dims));
        // A one-value exponent of 2 or 3 on a floating base of more than one value: x * x and
        // x * x * x, as onnxruntime computes them (its broadcast loop takes a one-value base
        // first, with std::pow, and special-cases these exponents only after it; x * x * x
        // rounds differently from pow for many x), and without a libm call per value
        // (LayerNorm's decomposed variance).
        if constexpr (std::is_floating_point_v<T>) {
          if (b.num_elements() == 1 && a.num_elements() != 1 && (b.data<U>()[0] == U(2) || b.data<U>()[0] == U(3))) {
            const bool cube = b.data<U>()[0] == U(3);
            const T* x = a.data<T>();
            T* y = out.data<T>();
            ParallelElements(*ctx.pool, out.num_elements(), [&](int64_t begin, int64_t end) {
              if (cube) {
                for (int64_t i = begin; i < end; ++i) y[i] = x[i] * x[i] * x[i];
              } else {
                for (int64_t i = begin; i < end; ++i) y[i] = x[i] * x[i];
              }
            });
            outputs[0] = std::move(out);
            return absl::OkStatus();
          }
        }
        BinaryLoop(*ctx.pool, plan, a.data<T>(), b.data<U>(), out.data<T>(), [](T x, U y) { return PowOp<T, U>(x, y); });
        outputs[0] = std::move(out);
        return absl::OkStatus();
      });
    };
    switch (a.dtype()) {
      case DataType::kFloat32: return base_types(float{});
      case DataType::kFloat64: return base_types(double{});
      case DataType::kInt32: return base_types(int32_t{});
      case DataType::kInt64: return base_types(int64_t{});
      default:
        return absl::UnimplementedError(absl::StrCat("Pow base type ", ir::DataTypeName(a.dtype())));
    }
  }

  template <typename F>
  static absl::Status DispatchPowExponent(DataType t, F&& f) {
    switch (t) {
      case DataType::kFloat32: return f(float{});
      case DataType::kFloat64: return f(double{});
      case DataType::kInt32: return f(int32_t{});
      case DataType::kInt64: return f(int64_t{});
      case DataType::kUint32: return f(uint32_t{});
      case DataType::kUint64: return f(uint64_t{});
      default:
        return absl::UnimplementedError(absl::StrCat("Pow exponent type ", ir::DataTypeName(t)));
    }
  }

  BinaryOp op_;
  bool fmod_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateBinaryKernel(const ir::Node& node) {
  const std::string& op = node.op_type();
  BinaryOp kind;
  if (op == "Add") {
    kind = BinaryOp::kAdd;
  } else if (op == "Sub") {
    kind = BinaryOp::kSub;
  } else if (op == "Mul") {
    kind = BinaryOp::kMul;
  } else if (op == "Div") {
    kind = BinaryOp::kDiv;
  } else if (op == "Mod") {
    QFUSE_ASSIGN_OR_RETURN(const int64_t fmod, node.attrs().GetInt("fmod", 0));
    if (fmod != 0 && fmod != 1) return absl::InvalidArgumentError(absl::StrCat("Mod fmod must be 0 or 1, got ", fmod));
    return std::unique_ptr<Kernel>(new BinaryKernel(BinaryOp::kMod, fmod == 1));
  } else if (op == "Pow") {
    kind = BinaryOp::kPow;
  } else if (op == "PRelu") {
    kind = BinaryOp::kPRelu;
  } else {
    return absl::UnimplementedError(absl::StrCat("binary operator ", op));
  }
  return std::unique_ptr<Kernel>(new BinaryKernel(kind));
}

}  // namespace qfuse::runtime::kernels
