// How a float Conv runs for one input and weight shape: the path, chosen once when the kernel
// is prepared (again only for a new shape or ISA cap), and the geometry it runs on.
#ifndef QFUSE_RUNTIME_KERNELS_LINALG_CONV_PLAN_H_
#define QFUSE_RUNTIME_KERNELS_LINALG_CONV_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/linalg/conv_attrs.h"
#include "runtime/kernels/linalg/conv_geometry.h"

namespace qfuse::runtime::kernels::linalg {

// Every path computes the same convolution (runtime/reference/conv.h is their oracle); they
// differ in how, so their float sums may round differently.
enum class ConvPath {
  // Weights [M, 1, k...] (one input channel per group): a direct loop per output channel
  // (DepthwiseChannel).
  kDepthwise,
  // 1-2 spatial dims, unit stride, not pointwise, AVX-512: a row-table GEMM reads a
  // zero-padded copy of the input rows in place, no im2col matrix (implicit_conv.h).
  kImplicitGemm,
  // Everything else: an im2col matrix (none for a pointwise 1x1 conv) times the weights,
  // per block of output rows or per whole image.
  kIm2ColGemm,
};
const char* ConvPathName(ConvPath path);

struct ConvPlan {
  ConvPath path = ConvPath::kIm2ColGemm;
  ConvGeometry geometry;
  int64_t in_channels = 0, out_channels = 0, group = 1;
  Isa isa = Isa::kScalar;  // the ISA cap the plan was made under
  // The shapes it was made for: input without its batch dim, weights.
  std::vector<int64_t> input_dims, weight_dims;

  // True when the plan holds for input `x_dims` (any batch) and weights `w_dims` under the
  // current ISA cap.
  bool Fits(absl::Span<const int64_t> x_dims, absl::Span<const int64_t> w_dims) const;
};

// One run's data for a path: x [batch, C, image...], w [M, C / group, kernel...], bias [M] or
// null, y [batch, M, col...] (allocated).
struct ConvBuffers {
  int64_t batch = 0;
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
};

// Target size (floats) of one block of a column matrix: 128 KiB, well inside L2.
inline constexpr int64_t kColBlockFloats = 32 * 1024;

// Checks input [N, C, spatial...] and weights [M, C / group, kernel...] against the attributes
// (ranks, channels, group, geometry) and chooses the path under the current ISA cap.
absl::StatusOr<ConvPlan> PlanConv(const ConvAttrs& attrs, absl::Span<const int64_t> x_dims,
                                  absl::Span<const int64_t> w_dims);

}  // namespace qfuse::runtime::kernels::linalg

#endif  // QFUSE_RUNTIME_KERNELS_LINALG_CONV_PLAN_H_
