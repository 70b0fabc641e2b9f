// What a QLinearUnit's output stage needs, read once from the node: the unit spec, the
// quantization of x, residual and y, the int32 bias and the OutputStage itself. Shared by
// the hand-written integer kernel and the oneDNN one so both requantize identically.
#ifndef QFUSE_RUNTIME_INT8_UNIT_REQUANTIZATION_H_
#define QFUSE_RUNTIME_INT8_UNIT_REQUANTIZATION_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/fused_unit.h"
#include "ir/graph.h"
#include "runtime/int8/output_stage.h"
#include "runtime/int8/value_params.h"

namespace qfuse::runtime::int8 {

struct UnitRequantization {
  ir::UnitSpec spec;
  bool float_epilogue = false;  // a non-linear activation (output_stage.h's float epilogue)
  ActivationQuant x;
  std::optional<ActivationQuant> residual;
  int64_t channel_axis = 0;     // of the weights: 0 for Conv and transB Gemm, else 1
  int64_t out_channels = 0;
  std::vector<int32_t> bias;    // [out_channels] or empty
  OutputStage stage;
  // int8_ops.h's kMatMulToFloatAttr: the float32 steps onnxruntime takes, with per channel
  // d_a[c] = float32(s_x * s_w[c]) and the dequantized bias float(b[c]) * s_b[c] (empty
  // without a bias).
  bool matmul_to_float = false;
  std::vector<float> dequant_scales;
  std::vector<float> float_bias;
};

// Whether a QLinearUnit computes base op `op` with the base op's attributes `attrs` and
// weights of rank `w_rank`: Conv (rank >= 3), Gemm and MatMul with transA 0, alpha 1, beta 1
// and 2-D weights; no ConvTranspose. An error says what is missing.
absl::Status CheckIntegerUnitForm(ir::UnitBaseOp op, const ir::AttributeMap& attrs, int64_t w_rank);

// Reads and validates a QLinearUnit node (int8_ops.h): weights a constant INT8 tensor with
// per-tensor or per-output-channel QuantParams, bias a constant INT32 [Cout].
absl::StatusOr<UnitRequantization> ReadUnitRequantization(const ir::Node& node);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_UNIT_REQUANTIZATION_H_
