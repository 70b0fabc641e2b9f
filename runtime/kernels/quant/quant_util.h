// Shared pieces of the integer kernels: reading scale / zero-point inputs, weights
// centred on their zero points and prepared once for the int8 GEMM, the GEMM over
// such weights (fast int8 path, or a portable int32 path for weights that do not fit
// int8 after centring, e.g. uint8 weights with zero point 0) and its overflow bound.
#ifndef QFUSE_RUNTIME_KERNELS_QUANT_QUANT_UTIL_H_
#define QFUSE_RUNTIME_KERNELS_QUANT_QUANT_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/tensor.h"
#include "runtime/kernels/quant/int8_gemm.h"

namespace qfuse::runtime::kernels::quant {

using ir::DataType;
using ir::Tensor;

// True for INT8 and UINT8.
bool IsQuantizedByteType(DataType t);
// [lowest, max] of INT8 / UINT8 / INT32.
int64_t TypeMin(DataType t);
int64_t TypeMax(DataType t);

// inputs[index], or null when `index` is -1 (not an input of this op) or past the end.
const Tensor* OptionalInput(absl::Span<const Tensor* const> inputs, int index);

// The values of a FLOAT scale input: `count` values (per axis) or one (per tensor);
// InvalidArgument naming `what` otherwise, or when a scale is not positive and finite.
absl::StatusOr<std::vector<float>> ReadScales(const Tensor& t, int64_t count, const std::string& what);

// The values of an INT8 / UINT8 / INT32 zero-point input as int32 (same count rule);
// a null tensor means one zero. `dtype` must match when not kUndefined.
absl::StatusOr<std::vector<int32_t>> ReadZeroPoints(const Tensor* t, int64_t count, DataType dtype,
                                                    const std::string& what);

// Output of a QLinear op: y_scale (one value) and the optional y_zero_point, whose
// type (UINT8 when absent; INT8 or UINT8, else Unimplemented) is the output type.
struct OutputQuant {
  DataType type = DataType::kUint8;
  float scale = 1.0f;
  int32_t zero_point = 0;
};
absl::StatusOr<OutputQuant> ReadOutputQuant(const Tensor& y_scale, const Tensor* y_zero_point);

// Weights W[k][n] = w[offset + k * stride_k + n * stride_n] - zero_points[n or 0] with w
// an INT8 or UINT8 tensor, prepared for IntegerGemm.
struct PreparedWeights {
  int64_t k = 0;
  int64_t n = 0;
  int64_t max_abs = 0;           // max |W[k][n]|, for the accumulator bound
  bool fits_int8 = false;        // every W in [-128, 127]: packed for Int8Gemm
  PackedInt8Weights packed;      // when fits_int8
  std::vector<int32_t> wide;     // [N][K] otherwise
};

// What prepared weights serve: GEMMs under any later ISA cap (constant weights, prepared
// once), or only under the current one (an activation B packed in the Run that uses it: the
// int16 copy the AVX2 madd path reads is left out unless that is the best path).
enum class PackingScope { kAnyIsa, kCurrentIsa };

struct WeightsView {
  const Tensor* tensor = nullptr;
  int64_t offset = 0;
  int64_t k = 0;
  int64_t n = 0;
  int64_t stride_k = 0;
  int64_t stride_n = 0;
  absl::Span<const int32_t> zero_points;  // 1 or n values
  PackingScope scope = PackingScope::kAnyIsa;
};
PreparedWeights PrepareWeights(const WeightsView& view);

// C = (A - a_zp) * W with the Int8Gemm contract (A rows as in args; args.isa and pool
// are used on the fast path only).
void IntegerGemm(const Int8GemmArgs& args, const PreparedWeights& w);

// numerics::CheckAccumulatorFitsInt32 for (A - a_zp) * W + bias: K and max |W| from
// `weights` (the last one's k), max |A - a_zp| over the `a_zps` for A of type `a_type`,
// and `max_abs_bias`; the error names `what`.
absl::Status CheckGemmAccumulatorBound(DataType a_type, absl::Span<const int32_t> a_zps,
                                       absl::Span<const PreparedWeights> weights, int64_t max_abs_bias,
                                       const std::string& what);

}  // namespace qfuse::runtime::kernels::quant

#endif  // QFUSE_RUNTIME_KERNELS_QUANT_QUANT_UTIL_H_
