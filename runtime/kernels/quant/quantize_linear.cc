// QuantizeLinear-10/13 and DequantizeLinear-10/13: per tensor, or per axis (opset 13).
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "numerics/requantize.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/quant/quant_ops.h"
#include "runtime/kernels/quant/quant_util.h"
#include "runtime/kernels/quant/quantize_row.h"

namespace qfuse::runtime::kernels {
namespace {


using quant::ReadScales;
using quant::ReadZeroPoints;

// Elements per step along the quantization axis (the product of the dims after it) and
// the axis length; per-tensor parameters use (n, 1).
struct AxisLayout {
  int64_t inner = 1;
  int64_t channels = 1;
};

absl::StatusOr<AxisLayout> Layout(const Tensor& x, int64_t axis, int64_t params) {
  if (params == 1) return AxisLayout{x.num_elements(), 1};
  QFUSE_ASSIGN_OR_RETURN(const int64_t a, NormalizeAxis(axis, x.rank()));
  if (x.dims()[a] != params) {
    return absl::InvalidArgumentError(absl::StrCat("per-axis parameters have ", params, " values but axis ", a,
                                                   " of ", ir::DimsToString(x.dims()), " has ", x.dims()[a]));
  }
  AxisLayout l;
  l.channels = params;
  for (int64_t d = a + 1; d < x.rank(); ++d) l.inner *= x.dims()[d];
  return l;
}

// Calls fn(c, begin, stop) for each run of [begin, end) whose elements share channel c's
// scale and zero point (runs of `inner` elements), so that a run's loop loads them once.
template <typename Fn>
void ForEachChannelRun(const AxisLayout& layout, int64_t begin, int64_t end, Fn fn) {
  for (int64_t i = begin; i < end;) {
    const int64_t row = i / layout.inner;
    const int64_t stop = std::min(end, (row + 1) * layout.inner);
    fn(row % layout.channels, i, stop);
    i = stop;
  }
}

// numerics::Dequantize over a run of INT8/UINT8 values with AVX2, 8 at a time: the byte minus
// the zero point is an exact int32 (as the int64 difference of the scalar form), converted
// exactly to float32 and multiplied once. Returns how many it wrote.
template <typename X>
__attribute__((target("avx2"))) int64_t DequantizeRunAvx2(const X* x, int64_t n, float scale, int32_t zero_point,
                                                          float* y) {
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256i vzp = _mm256_set1_epi32(zero_point);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i));
    const __m256i wide = std::is_signed_v<X> ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(wide, vzp)), vscale));
  }
  return i;
}

// Number of values of a scale input (1 for a scalar).
int64_t ParamCount(const Tensor& scale) { return scale.num_elements(); }

class QuantizeLinearKernel : public Kernel {
 public:
  explicit QuantizeLinearKernel(int64_t axis) : axis_(axis) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    const Tensor* zp_t = inputs.size() > 2 ? inputs[2] : nullptr;
    const DataType out_type = zp_t != nullptr ? zp_t->dtype() : DataType::kUint8;
    if (!quant::IsQuantizedByteType(out_type)) {
      return absl::UnimplementedError(
          absl::StrCat("y_zero_point has type ", ir::DataTypeName(out_type), "; expected INT8 or UINT8"));
    }
    if (x.dtype() != DataType::kFloat32 && x.dtype() != DataType::kInt32) {
      return absl::UnimplementedError(absl::StrCat("x has type ", ir::DataTypeName(x.dtype()), "; expected FLOAT or INT32"));
    }
    const int64_t params = ParamCount(*inputs[1]);
    QFUSE_ASSIGN_OR_RETURN(std::vector<float> scales, ReadScales(*inputs[1], params, "y_scale"));
    QFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> zps, ReadZeroPoints(zp_t, params, out_type, "y_zero_point"));
    if (zps.size() != scales.size()) zps.resize(scales.size(), zps[0]);
    QFUSE_ASSIGN_OR_RETURN(AxisLayout layout, Layout(x, axis_, params));
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out_type, x.dims()));
    const int64_t n = x.num_elements();
    auto run = [&](const auto* xd, auto* y) {
      using T = std::remove_pointer_t<decltype(y)>;
      ctx.pool->ParallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
        ForEachChannelRun(layout, begin, end, [&](int64_t c, int64_t i, int64_t stop) {
          const float scale = scales[c];
          const int32_t zp = zps[c];
          if constexpr (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(xd)>>, float>) {
            quant::QuantizeLinearRow(xd + i, stop - i, scale, zp, y + i);
          } else {
            for (; i < stop; ++i) y[i] = numerics::QuantizeLinear<T>(static_cast<float>(xd[i]), scale, zp);
          }
        });
      });
    };
    // The input and output types are chosen once, outside the element loop.
    auto with_input = [&](auto* y) {
      if (x.dtype() == DataType::kFloat32) {
        run(x.data<float>(), y);
      } else {
        run(x.data<int32_t>(), y);
      }
    };
    if (out_type == DataType::kInt8) {
      with_input(outputs[0].data<int8_t>());
    } else {
      with_input(outputs[0].data<uint8_t>());
    }
    return absl::OkStatus();
  }

 private:
  const int64_t axis_;
};

class DequantizeLinearKernel : public Kernel {
 public:
  explicit DequantizeLinearKernel(int64_t axis) : axis_(axis) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    const Tensor* zp_t = inputs.size() > 2 ? inputs[2] : nullptr;
    if (!quant::IsQuantizedByteType(x.dtype()) && x.dtype() != DataType::kInt32) {
      return absl::UnimplementedError(
          absl::StrCat("x has type ", ir::DataTypeName(x.dtype()), "; expected INT8, UINT8 or INT32"));
    }
    const int64_t params = ParamCount(*inputs[1]);
    QFUSE_ASSIGN_OR_RETURN(std::vector<float> scales, ReadScales(*inputs[1], params, "x_scale"));
    QFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> zps, ReadZeroPoints(zp_t, params, x.dtype(), "x_zero_point"));
    if (zps.size() != scales.size()) zps.resize(scales.size(), zps[0]);
    QFUSE_ASSIGN_OR_RETURN(AxisLayout layout, Layout(x, axis_, params));
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(DataType::kFloat32, x.dims()));  // all written
    float* y = outputs[0].data<float>();
    const int64_t n = x.num_elements();
    const bool avx2 = IsaAllowed(Isa::kAvx2);
    auto run = [&](const auto* xd) {
      using X = std::remove_cv_t<std::remove_pointer_t<decltype(xd)>>;
      ctx.pool->ParallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
        ForEachChannelRun(layout, begin, end, [&](int64_t c, int64_t i, int64_t stop) {
          if constexpr (sizeof(X) == 1) {
            if (avx2) i += DequantizeRunAvx2(xd + i, stop - i, scales[c], zps[c], y + i);
          }
          for (; i < stop; ++i) y[i] = numerics::Dequantize(xd[i], scales[c], zps[c]);
        });
      });
    };
    switch (x.dtype()) {
      case DataType::kInt8: run(x.data<int8_t>()); break;
      case DataType::kUint8: run(x.data<uint8_t>()); break;
      default: run(x.data<int32_t>()); break;
    }
    return absl::OkStatus();
  }

 private:
  const int64_t axis_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQuantizeLinearKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(const int64_t axis, node.attrs().GetInt("axis", 1));
  return std::make_unique<QuantizeLinearKernel>(axis);
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateDequantizeLinearKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(const int64_t axis, node.attrs().GetInt("axis", 1));
  return std::make_unique<DequantizeLinearKernel>(axis);
}

}  // namespace qfuse::runtime::kernels
