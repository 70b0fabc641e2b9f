// Elementwise float kernels: unary activations and math (Relu ... Clip, Identity, Dropout), numpy-broadcasting binary ops (Add, Sub, Mul, Div, Pow, PRelu), variadic Sum/Max/Min, and Cast.
#ifndef QFUSE_RUNTIME_KERNELS_ELEMENTWISE_ELEMENTWISE_H_
#define QFUSE_RUNTIME_KERNELS_ELEMENTWISE_ELEMENTWISE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace qfuse::runtime::kernels {

absl::StatusOr<std::unique_ptr<Kernel>> CreateUnaryKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateBinaryKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateVariadicKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateCastKernel(const ir::Node& node);
// Equal, Less, Greater (BOOL output) and Where (compare_select.cc).
absl::StatusOr<std::unique_ptr<Kernel>> CreateCompareKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateNotKernel(const ir::Node& node);
absl::StatusOr<std::unique_ptr<Kernel>> CreateWhereKernel(const ir::Node& node);

}  // namespace qfuse::runtime::kernels

#endif  // QFUSE_RUNTIME_KERNELS_ELEMENTWISE_ELEMENTWISE_H_
