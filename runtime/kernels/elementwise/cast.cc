// Cast between FLOAT, DOUBLE, FLOAT16, BFLOAT16, the integer types and BOOL.
// Float -> integer truncates toward zero (out-of-range and NaN give 0 rather than
// undefined behaviour); anything -> BOOL is `value != 0`; narrowing to FLOAT16 rounds
// the double value once, to nearest even. Narrowing to BFLOAT16 TRUNCATES the float
// value (drops the low 16 bits), as ONNX 1.12's reference Cast does and its
// conformance data (test_cast_FLOAT_to_BFLOAT16) requires; round-to-nearest-even
// would differ by one bfloat16 ulp (2^-8 relative), beyond the test tolerance.
#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/float16.h"
#include "runtime/kernels/elementwise/broadcast.h"
#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/kernel_util.h"

namespace qfuse::runtime::kernels {
namespace {

// Storage tags for the 16-bit float types (their bits live in uint16_t).
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};

template <typename F>
absl::Status DispatchCastType(DataType t, F&& f) {
  switch (t) {
    case DataType::kFloat32: return f(float{});
    case DataType::kFloat64: return f(double{});
    case DataType::kFloat16: return f(Half{});
    case DataType::kBFloat16: return f(BFloat{});
    case DataType::kInt8: return f(int8_t{});
    case DataType::kUint8: return f(uint8_t{});
    case DataType::kInt16: return f(int16_t{});
    case DataType::kUint16: return f(uint16_t{});
    case DataType::kInt32: return f(int32_t{});
    case DataType::kUint32: return f(uint32_t{});
    case DataType::kInt64: return f(int64_t{});
    case DataType::kUint64: return f(uint64_t{});
    case DataType::kBool: return f(bool{});
    default: return absl::UnimplementedError(absl::StrCat("Cast of type ", ir::DataTypeName(t)));
  }
}

// The value of one element in the widest type that holds it exactly.
template <typename S>
auto Load(S v) {
  if constexpr (std::is_same_v<S, Half>) {
    return static_cast<double>(ir::HalfBitsToFloat(v.bits));
  } else if constexpr (std::is_same_v<S, BFloat>) {
    return static_cast<double>(ir::BFloat16BitsToFloat(v.bits));
  } else {
    return v;
  }
}

template <typename D, typename V>
D Store(V v) {
  if constexpr (std::is_same_v<D, Half>) {
    return Half{ir::DoubleToHalfBits(static_cast<double>(v))};
  } else if constexpr (std::is_same_v<D, BFloat>) {
    return BFloat{ir::FloatToBFloat16BitsTruncate(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != V(0);
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) {
    const double t = std::trunc(static_cast<double>(v));
    if (!(t >= static_cast<double>(std::numeric_limits<D>::lowest()) &&
          t <= static_cast<double>(std::numeric_limits<D>::max()))) {
      return D(0);
    }
    return static_cast<D>(t);
  } else {
    return static_cast<D>(v);
  }
}

class CastKernel : public Kernel {
 public:
  explicit CastKernel(DataType to) : to_(to) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    if (x.dtype() == to_) {
      outputs[0] = x;
      return absl::OkStatus();
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(to_, x.dims()));
    QFUSE_RETURN_IF_ERROR(DispatchCastType(x.dtype(), [&](auto src_tag) {
      using S = decltype(src_tag);
      return DispatchCastType(to_, [&](auto dst_tag) {
        using D = decltype(dst_tag);
        const S* in = static_cast<const S*>(x.raw_data());
        D* out = static_cast<D*>(y.raw_data());
        ParallelElements(*ctx.pool, x.num_elements(), [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) out[i] = Store<D>(Load(in[i]));
        });
        return absl::OkStatus();
      });
    }));
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }

 private:
  DataType to_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateCastKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(int64_t to, node.attrs().GetInt("to", 0));
  absl::StatusOr<DataType> dtype = ir::DataTypeFromOnnx(static_cast<int32_t>(to));
  if (!dtype.ok()) return absl::UnimplementedError(absl::StrCat("Cast to ONNX type ", to));
  return std::unique_ptr<Kernel>(new CastKernel(*dtype));
}

}  // namespace qfuse::runtime::kernels
