// Helpers of the integer elementwise and pooling kernels (qlinear_ops.cc, qlinear_pool.cc).
#ifndef QFUSE_RUNTIME_INT8_QLINEAR_KERNEL_UTIL_H_
#define QFUSE_RUNTIME_INT8_QLINEAR_KERNEL_UTIL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/graph.h"
#include "runtime/int8/value_params.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::int8 {

// Calls fn(p) with p the typed data pointer of an INT8 or UINT8 tensor.
template <typename Fn>
inline void WithBytes(const Tensor& t, Fn&& fn) {
  if (t.dtype() == ir::DataType::kInt8) {
    fn(t.data<int8_t>());
  } else {
    fn(t.data<uint8_t>());
  }
}
template <typename Fn>
inline void WithMutableBytes(Tensor* t, Fn&& fn) {
  if (t->dtype() == ir::DataType::kInt8) {
    fn(t->data<int8_t>());
  } else {
    fn(t->data<uint8_t>());
  }
}

inline absl::Status CheckType(const Tensor* t, const ActivationQuant& q, const char* what) {
  if (t == nullptr || t->dtype() != q.type) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be ", ir::DataTypeName(q.type)));
  }
  return absl::OkStatus();
}

// A kernel K(args...) prepared for `node` (K::Prepare).
template <typename K, typename... Args>
absl::StatusOr<std::unique_ptr<Kernel>> MakePrepared(const ir::Node& node, Args... args) {
  auto k = std::make_unique<K>(args...);
  QFUSE_RETURN_IF_ERROR(k->Prepare(node));
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_QLINEAR_KERNEL_UTIL_H_
