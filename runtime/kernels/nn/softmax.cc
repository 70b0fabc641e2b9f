// Softmax and LogSoftmax over one axis (opset-13 semantics; the importer rewrote older
// forms), FLOAT only. Each slice subtracts its maximum before exp, so large inputs do not
// overflow; sums accumulate in float.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/kernels/nn/nn_common.h"

namespace qfuse::runtime::kernels {
namespace {

using nn_internal::AxisView;
using nn_internal::MinChunk;

// One contiguous slice of `n` values.
template <bool kLog>
void SoftmaxContiguous(const float* x, int64_t n, float* y) {
  float max = std::numeric_limits<float>::lowest();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  float sum = 0.0f;
  if (kLog) {
    for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
    const float shift = max + std::log(sum);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - shift;
  } else {
    for (int64_t i = 0; i < n; ++i) {
      y[i] = std::exp(x[i] - max);
      sum += y[i];
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

// One [axis, inner] block, reduced over axis for every inner position at once;
// `max` and `sum` are scratch rows of `inner` floats.
template <bool kLog>
void SoftmaxStrided(const float* x, int64_t axis, int64_t inner, float* y, float* max, float* sum) {
  std::fill(max, max + inner, std::numeric_limits<float>::lowest());
  std::fill(sum, sum + inner, 0.0f);
  for (int64_t a = 0; a < axis; ++a) {
    const float* xa = x + a * inner;
    for (int64_t i = 0; i < inner; ++i) max[i] = std::max(max[i], xa[i]);
  }
  for (int64_t a = 0; a < axis; ++a) {
    const float* xa = x + a * inner;
    float* ya = y + a * inner;
    for (int64_t i = 0; i < inner; ++i) {
      ya[i] = std::exp(xa[i] - max[i]);
      sum[i] += ya[i];
    }
  }
  if (kLog) {
    for (int64_t i = 0; i < inner; ++i) sum[i] = max[i] + std::log(sum[i]);
    for (int64_t a = 0; a < axis; ++a) {
      const float* xa = x + a * inner;
      float* ya = y + a * inner;
      for (int64_t i = 0; i < inner; ++i) ya[i] = xa[i] - sum[i];
    }
  } else {
    for (int64_t i = 0; i < inner; ++i) sum[i] = 1.0f / sum[i];
    for (int64_t a = 0; a < axis; ++a) {
      float* ya = y + a * inner;
      for (int64_t i = 0; i < inner; ++i) ya[i] *= sum[i];
    }
  }
}

class SoftmaxKernel : public Kernel {
 public:
  SoftmaxKernel(int64_t axis, bool log) : axis_(axis), log_(log) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    if (x.dtype() != DataType::kFloat32) {
      return absl::UnimplementedError(absl::StrCat("Softmax of ", ir::DataTypeName(x.dtype()), " input (FLOAT only)"));
    }
    if (x.rank() == 0) return absl::InvalidArgumentError("Softmax input must have rank >= 1, got a scalar");
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, x.rank()));
    const AxisView v = nn_internal::ViewAroundAxis(x.dims(), axis);
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kFloat32, x.dims()));
    const float* xd = x.data<float>();
    float* yd = outputs[0].data<float>();
    const int64_t block = v.axis * v.inner;
    const bool log = log_;
    ctx.pool->ParallelFor(v.outer, MinChunk(4 * block), [&](int64_t begin, int64_t end) {
      if (v.inner == 1) {
        for (int64_t o = begin; o < end; ++o) {
          if (log) {
            SoftmaxContiguous<true>(xd + o * block, v.axis, yd + o * block);
          } else {
            SoftmaxContiguous<false>(xd + o * block, v.axis, yd + o * block);
          }
        }
        return;
      }
      std::vector<float> scratch(2 * v.inner);
      for (int64_t o = begin; o < end; ++o) {
        if (log) {
          SoftmaxStrided<true>(xd + o * block, v.axis, v.inner, yd + o * block, scratch.data(),
                               scratch.data() + v.inner);
        } else {
          SoftmaxStrided<false>(xd + o * block, v.axis, v.inner, yd + o * block, scratch.data(),
                                scratch.data() + v.inner);
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  bool log_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateSoftmaxKernel(const ir::Node& node) {
  if (node.op_type() != "Softmax" && node.op_type() != "LogSoftmax") {
    return absl::InvalidArgumentError(absl::StrCat("CreateSoftmaxKernel cannot run ", node.op_type()));
  }
  QFUSE_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", -1));
  return std::unique_ptr<Kernel>(new SoftmaxKernel(axis, node.op_type() == "LogSoftmax"));
}

}  // namespace qfuse::runtime::kernels
