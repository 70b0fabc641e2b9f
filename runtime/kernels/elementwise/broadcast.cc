#include "runtime/kernels/elementwise/broadcast.h"

#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"

namespace qfuse::runtime::kernels {

absl::StatusOr<BroadcastPlan> MakeBroadcastPlan(absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  BroadcastPlan plan;
  QFUSE_ASSIGN_OR_RETURN(plan.out_dims, BroadcastShapes(a, b));
  const size_t rank = plan.out_dims.size();
  plan.num_elements = ir::NumElements(plan.out_dims);
  // Collapse: drop size-1 output axes, merge neighbours broadcast the same way.
  std::vector<int64_t> dims, a_dims, b_dims;
  int prev_kind = -1;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = plan.out_dims[i];
    if (d == 1) continue;
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    const int kind = (da == d ? 1 : 0) | (db == d ? 2 : 0);
    if (kind == prev_kind) {
      dims.back() *= d;
      a_dims.back() *= da;
      b_dims.back() *= db;
    } else {
      dims.push_back(d);
      a_dims.push_back(da);
      b_dims.push_back(db);
      prev_kind = kind;
    }
  }
  if (dims.empty()) {
    dims = {1};
    a_dims = {1};
    b_dims = {1};
  }
  plan.a_strides = BroadcastStrides(a_dims, dims);
  plan.b_strides = BroadcastStrides(b_dims, dims);
  plan.dims = std::move(dims);
  plan.inner = plan.dims.back();
  plan.a_step = plan.a_strides.back();
  plan.b_step = plan.b_strides.back();
  return plan;
}

}  // namespace qfuse::runtime::kernels
