// Requantizing one int8/uint8 input to another quantization: the single-term output stage
// (runtime/int8/output_stage.h) and the 256-byte table of a requantizing clamp, shared by
// QLinearClamp, QLinearConcat, the average pools and the clamps folded into QLinearUnit
// (qdq_lowering.h).
#ifndef QFUSE_RUNTIME_INT8_UNARY_REQUANTIZATION_H_
#define QFUSE_RUNTIME_INT8_UNARY_REQUANTIZATION_H_

#include <array>
#include <cstdint>
#include <limits>

#include "absl/status/statusor.h"
#include "ir/fused_unit.h"
#include "numerics/requantize.h"
#include "runtime/int8/byte_table.h"
#include "runtime/int8/output_stage.h"
#include "runtime/int8/value_params.h"

namespace qfuse::runtime::int8 {

// Raw input byte -> output byte of QuantizeLinear(f(DequantizeLinear(x)), y) for a float32
// function f, each step as numerics:: computes it (onnxruntime's DequantizeLinear and
// QuantizeLinear): the table of every byte-table op whose float steps sit between the two.
template <typename F>
ByteTable DequantizedTable(const ActivationQuant& x, const ActivationQuant& y, F f) {
  ByteTable table{};
  for (int raw = 0; raw < 256; ++raw) {
    const int32_t q = x.type == ir::DataType::kInt8 ? static_cast<int8_t>(raw) : raw;
    const float v = f(numerics::Dequantize(q, x.scale, x.zero_point));
    table[raw] = y.type == ir::DataType::kInt8
                     ? static_cast<uint8_t>(numerics::QuantizeLinear<int8_t>(v, y.scale, y.zero_point))
                     : numerics::QuantizeLinear<uint8_t>(v, y.scale, y.zero_point);
  }
  return table;
}

// A single-term output stage from `in` to `out` (multiplier in.scale * weight / out.scale,
// activation bounds act_min / act_max in real units).
absl::StatusOr<OutputStage> SingleTermStage(numerics::RequantizeMode mode, const ActivationQuant& in,
                                            const ActivationQuant& out, float weight = 1.f,
                                            float act_min = std::numeric_limits<float>::lowest(),
                                            float act_max = std::numeric_limits<float>::max());

// Raw input byte -> output byte of y = clamp(x, lo, hi) requantized from x's quantization to
// y's. Mode kOnnx is onnxruntime's float path DequantizeLinear -> [Relu | Clip] ->
// QuantizeLinear (it has no integer Relu or Clip; its QLinearConcat tables are the same
// Q(DQ(x))); kFixed is the single-term output stage with bounds lo and hi.
absl::StatusOr<ByteTable> ClampTable(numerics::RequantizeMode mode, const ActivationQuant& x,
                                                    const ActivationQuant& y, float lo, float hi);

// Raw input byte -> output byte of DequantizeLinear(x) -> `activation` (a non-linear unit
// activation of ir/fused_unit.h: HardSwish, HardSigmoid, Sigmoid, SiLU, LeakyRelu) ->
// QuantizeLinear(y), each step the float32 arithmetic of qfuse's float kernels and
// onnxruntime's (ir::ApplyUnitActivation, numerics::Dequantize / QuantizeLinear): the bytes
// those ops write between the two, in either requantization mode (the ops are float in both).
ByteTable ActivationTable(const ActivationQuant& x, const ActivationQuant& y, const ir::UnitSpec& activation);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_UNARY_REQUANTIZATION_H_
