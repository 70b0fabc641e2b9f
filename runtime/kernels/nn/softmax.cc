// Softmax and LogSoftmax over one axis (opset-13 semantics; the importer rewrote older
// forms), FLOAT only. Each slice is computed as onnxruntime computes a row (softmax_row.h).
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/kernels/nn/nn_common.h"
#include "runtime/kernels/nn/softmax_row.h"

namespace qfuse::runtime::kernels {
namespace {

using nn_internal::AxisView;
using nn_internal::MinChunk;

// One [axis, inner] block: each inner position's slice gathered into a row, normalised as
// a contiguous one (as onnxruntime transposes the axis last), and scattered back. `row` is
// scratch of 2 * axis floats.
void SoftmaxStrided(const float* x, int64_t axis, int64_t inner, bool log, SoftmaxSumKernel kernel, bool vector,
                    float* y, float* row) {
  float* out = row + axis;
  for (int64_t i = 0; i < inner; ++i) {
    for (int64_t a = 0; a < axis; ++a) row[a] = x[a * inner + i];
    SoftmaxRow(row, axis, log, out, kernel, vector);
    for (int64_t a = 0; a < axis; ++a) y[a * inner + i] = out[a];
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
    const bool vector = IsaAllowed(Isa::kAvx2);
    const SoftmaxSumKernel kernel = OnnxruntimeSoftmaxSumKernel();
    ctx.pool->ParallelFor(v.outer, MinChunk(4 * block), [&](int64_t begin, int64_t end) {
      if (v.inner == 1) {
        for (int64_t o = begin; o < end; ++o) SoftmaxRow(xd + o * block, v.axis, log, yd + o * block, kernel, vector);
        return;
      }
      std::vector<float> scratch(2 * v.axis);
      for (int64_t o = begin; o < end; ++o) {
        SoftmaxStrided(xd + o * block, v.axis, v.inner, log, kernel, vector, yd + o * block, scratch.data());
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
