#include "runtime/kernels/linalg/conv_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/graph.h"

namespace qfuse::runtime::kernels::linalg {

const char* ConvPathName(ConvPath path) {
  switch (path) {
    case ConvPath::kDepthwise: return "depthwise";
    case ConvPath::kImplicitGemm: return "implicit_gemm";
    case ConvPath::kIm2ColGemm: return "im2col_gemm";
  }
  return "?";
}

bool ConvPlan::Fits(absl::Span<const int64_t> x_dims, absl::Span<const int64_t> w_dims) const {
  return isa == MaxIsa() && !x_dims.empty() && absl::MakeConstSpan(input_dims) == x_dims.subspan(1) &&
         absl::MakeConstSpan(weight_dims) == w_dims;
}

absl::StatusOr<ConvPlan> PlanConv(const ConvAttrs& attrs, absl::Span<const int64_t> x_dims,
                                  absl::Span<const int64_t> w_dims) {
  if (x_dims.size() < 3 || w_dims.size() != x_dims.size()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", ir::DimsToString(x_dims), " and weights ",
                                                   ir::DimsToString(w_dims), " must have the same rank >= 3"));
  }
  ConvPlan plan;
  plan.in_channels = x_dims[1];
  plan.out_channels = w_dims[0];
  plan.group = attrs.group;
  if (plan.in_channels != w_dims[1] * plan.group || plan.out_channels % plan.group != 0) {
    return absl::InvalidArgumentError(absl::StrCat("input ", ir::DimsToString(x_dims), ", weights ",
                                                   ir::DimsToString(w_dims), " and group ", plan.group,
                                                   " do not agree"));
  }
  QFUSE_ASSIGN_OR_RETURN(plan.geometry, ResolveConv(attrs, x_dims.subspan(2), w_dims.subspan(2)));
  plan.isa = MaxIsa();
  plan.input_dims.assign(x_dims.begin() + 1, x_dims.end());
  plan.weight_dims.assign(w_dims.begin(), w_dims.end());
  const ConvGeometry& g = plan.geometry;
  if (plan.group == plan.in_channels && w_dims[1] == 1) {
    plan.path = ConvPath::kDepthwise;
  } else if (plan.isa >= Isa::kAvx512 && !g.IsPointwise() && g.image[0] == 1 && g.col[0] == 1 && g.kernel[0] == 1 &&
             g.stride[1] == 1 && g.stride[2] == 1) {
    plan.path = ConvPath::kImplicitGemm;
  } else {
    plan.path = ConvPath::kIm2ColGemm;
  }
  return plan;
}

}  // namespace qfuse::runtime::kernels::linalg
