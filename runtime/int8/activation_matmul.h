// Pattern (g) of the QDQ lowering (runtime/int8/qdq_lowering.h): MatMul(DQ(a), DQ(b)) -> Q
// of two per-tensor int8 activations (an attention's Q K^T and P V) => ONNX QLinearMatMul on
// the int8 values (runtime/kernels/quant: exact int32 sums, requantized as mode kOnnx,
// numerics/requantize.h). onnxruntime fuses the same group into the same op, so the two
// runtimes compute it alike; the float group it replaces rounds differently near a tie. Taken
// in mode kOnnx only (QLinearMatMul has no fixed-point form here); the scales and zero points
// are the DequantizeLinear's and QuantizeLinear's own constants, which must all be present.
#ifndef QFUSE_RUNTIME_INT8_ACTIVATION_MATMUL_H_
#define QFUSE_RUNTIME_INT8_ACTIVATION_MATMUL_H_

#include <cstdint>
#include <optional>

#include "ir/graph.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/group_replacer.h"
#include "runtime/int8/qdq_operands.h"

namespace qfuse::runtime::int8 {

struct ActivationMatMulMatch {
  ir::NodeId matmul = ir::kNoNode;
  DqOperand a;
  DqOperand b;
  Sink sink;
};

class ActivationMatMulPattern : public ir::rewrite::Pattern<ActivationMatMulMatch> {
 public:
  explicit ActivationMatMulPattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<ActivationMatMulMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const ActivationMatMulMatch& m) const override;

 private:
  const Replacer& replacer_;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_ACTIVATION_MATMUL_H_
