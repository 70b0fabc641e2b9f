// Reading the per-tensor quantization of an int8/uint8 graph value (its type's QuantParams)
// for the integer kernels.
#ifndef QFUSE_RUNTIME_INT8_VALUE_PARAMS_H_
#define QFUSE_RUNTIME_INT8_VALUE_PARAMS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/graph.h"

namespace qfuse::runtime::int8 {

struct ActivationQuant {
  ir::DataType type = ir::DataType::kInt8;  // kInt8 or kUint8
  float scale = 1.f;
  int32_t zero_point = 0;
};

// The per-tensor quantization of `v` (an INT8/UINT8 value whose type has QuantParams);
// InvalidArgument naming `what` otherwise.
inline absl::StatusOr<ActivationQuant> ReadActivationQuant(const ir::Value* v, const std::string& what) {
  if (v == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, " is missing"));
  const ir::TensorType& t = v->type();
  if ((t.dtype != ir::DataType::kInt8 && t.dtype != ir::DataType::kUint8) || !t.quant.has_value() ||
      t.quant->scales.size() != 1 || t.quant->zero_points.size() != 1 || !(t.quant->scales[0] > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", v->name(), "' has type ", t.ToString(),
                                                   "; expected INT8/UINT8 with per-tensor quantization parameters"));
  }
  return ActivationQuant{t.dtype, t.quant->scales[0], static_cast<int32_t>(t.quant->zero_points[0])};
}

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_VALUE_PARAMS_H_
