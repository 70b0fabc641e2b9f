// QLinearSoftmax (int8_ops.h): onnxruntime's com.microsoft.QLinearSoftmax for UINT8, step
// for step, so that a QDQ Softmax gives onnxruntime's bytes (read from its
// contrib_ops/cpu/quantization/qlinear_softmax.cc; checked against onnxruntime 1.30 on the
// zoo's attention Softmaxes, docs/zoo.md). Every step is float32 or double as there: the table
// comes from double exp of a shift whose logarithm is taken in float (logf), the sum is a
// float sum in axis order, and the quotient rounds half to even.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/kernels/kernel_util.h"

namespace qfuse::runtime::int8 {
namespace {

// e[i] = exp((i - 255 + shift) * s_x) with shift = max(0, logf(FLT_MAX / D) - 5) / s_x: the
// largest term of a slice is scaled so that D of them stay below FLT_MAX.
std::vector<float> ExpTable(float x_scale, int64_t reduce_len) {
  const float headroom = std::numeric_limits<float>::max() / static_cast<float>(reduce_len);
  double shift = std::log(headroom);  // float log, as onnxruntime's call resolves
  shift = std::max(0.0, shift - 5.0) / x_scale;
  std::vector<float> table(256);
  for (int i = 0; i < 256; ++i) {
    table[i] = static_cast<float>(std::exp((static_cast<double>(i) - 255 + shift) * static_cast<double>(x_scale)));
  }
  return table;
}

class QLinearSoftmaxKernel : public Kernel {
 public:
  absl::Status Prepare(const ir::Node& node) {
    QFUSE_ASSIGN_OR_RETURN(const ActivationQuant x, ReadActivationQuant(node.input(0), "X"));
    QFUSE_ASSIGN_OR_RETURN(const ActivationQuant y, ReadActivationQuant(node.output(0), "Y"));
    if (x.type != ir::DataType::kUint8 || y.type != ir::DataType::kUint8) {
      return absl::UnimplementedError("QLinearSoftmax runs UINT8 to UINT8 only");
    }
    QFUSE_ASSIGN_OR_RETURN(axis_, node.attrs().GetInt("axis", -1));
    x_scale_ = x.scale;
    y_factor_ = std::floor(1.0f / y.scale);
    y_zero_point_ = static_cast<uint32_t>(y.zero_point);
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    if (x.dtype() != ir::DataType::kUint8) return absl::InvalidArgumentError("X must be UINT8");
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, kernels::NormalizeAxis(axis_, x.rank()));
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(ir::DataType::kUint8, x.dims()));
    const int64_t len = x.dims()[axis];
    if (x.num_elements() == 0) return absl::OkStatus();
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dims()[d];
    const int64_t slices = x.num_elements() / len;
    const std::vector<float> table = ExpTable(x_scale_, len);
    const uint8_t* xd = x.data<uint8_t>();
    uint8_t* yd = outputs[0].data<uint8_t>();
    ctx.pool->ParallelFor(slices, std::max<int64_t>(1, 4096 / len), [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        // Slice s: elements base + k * inner, k = 0 .. len - 1.
        const int64_t base = (s / inner) * len * inner + s % inner;
        uint8_t x_max = 0;
        for (int64_t k = 0; k < len; ++k) x_max = std::max(x_max, xd[base + k * inner]);
        const float* shifted = table.data() + (255 - x_max);
        float sum = 0.f;
        for (int64_t k = 0; k < len; ++k) sum += shifted[xd[base + k * inner]];
        if (!(sum > 0.f)) {  // cannot happen: the largest term is e[255] >= 1
          for (int64_t k = 0; k < len; ++k) yd[base + k * inner] = static_cast<uint8_t>(y_zero_point_);
          continue;
        }
        for (int64_t k = 0; k < len; ++k) {
          const float term = shifted[xd[base + k * inner]];
          const uint32_t q = static_cast<uint32_t>(std::nearbyint((term * y_factor_) / sum)) + y_zero_point_;
          yd[base + k * inner] = static_cast<uint8_t>(std::min<uint32_t>(q, 255));
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = -1;
  float x_scale_ = 1.f;
  float y_factor_ = 1.f;  // floor(1 / s_y)
  uint32_t y_zero_point_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearSoftmaxKernel(const ir::Node& node) {
  auto k = std::make_unique<QLinearSoftmaxKernel>();
  QFUSE_RETURN_IF_ERROR(k->Prepare(node));
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace qfuse::runtime::int8
