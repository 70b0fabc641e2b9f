// Lowers a QDQ graph (quant/qdq_converter.h, units expanded by ir::ExpandUnits) to
// qfuse's integer operators (runtime/int8/int8_ops.h): a table of ir::rewrite patterns
// (ir/rewrite/pattern.h), each anchored at the float op of one DQ -> op -> Q group, whose
// const Match names the group and whose action replaces it, run as one sweep in
// topological order (ir::rewrite::RewriteOnce). The patterns, by anchor op:
//   (a) Conv | Gemm | MatMul: the unit chain of ir::MatchUnitChain with quantized operands,
//       DQ(x) -> op(DQ(int8 w), [DQ(int32 b)]) -> [Add DQ(int32 b)] -> [Add DQ(r)]
//       -> [activation] -> Q (or float graph output)                       => QLinearUnit
//       (activation: any form of ir::MatchUnitActivation, e.g. Relu, Clip, HardSwish,
//       Sigmoid + Mul as SiLU, HardSigmoid + Mul as HardSwish, Sigmoid, LeakyRelu)
//   (a') ConvInteger -> [Add int32 bias] -> DequantizeLinear -> [Add DQ(r)] -> [activation]
//       -> Q, the integer-head form of quant/integer_heads.h                 => QLinearUnit
//   (b) Add(DQ(a), DQ(b)) -> Q, any broadcastable shapes                     => QLinearAdd
//   (b') Mul(DQ(a), DQ(b)) -> Q, any broadcastable shapes                    => QLinearMul
//   (c) Relu | Clip(DQ(x)) -> Q                                              => QLinearClamp
//   (d) MaxPool | Reshape | Flatten | Transpose | Squeeze | Unsqueeze | Identity
//       (DQ(x)) -> Q with Q's params equal to x's                            => the op on int8
//   (e) AveragePool | GlobalAveragePool(DQ(x)) -> Q                          => QLinear*AveragePool
//   (f) Concat(DQ(x_0), ..., DQ(x_n)) -> Q                                   => QLinearConcat
//   (g) MatMul(DQ(a), DQ(b)) -> Q of two activations, mode kOnnx (activation_matmul.h)
//                                                                            => ONNX QLinearMatMul
//   (h) in a float region: ReduceMean -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div
//       -> Mul scale -> Add bias, the pre-opset-17 LayerNorm (layer_norm_fusion.h)
//                                                               => float LayerNormalization
//   (i) Softmax(DQ(x)) -> Q, x and y UINT8, mode kOnnx (activation_softmax.h)
//                                                => QLinearSoftmax, onnxruntime's arithmetic
//   (j) in a float region: Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5 (or Mul(Mul(x,
//       0.5), .)), GELU before opset 20 (gelu_fusion.h)   => qfuse.Gelu, onnxruntime's arithmetic
//   (k) HardSwish | HardSigmoid | Sigmoid | LeakyRelu | Sigmoid + Mul (SiLU) | HardSigmoid + Mul
//       (DQ(x)) -> Q (activation_lookup.h)          => QLinearActivation, a 256-byte table
//   (l) DQ(x_0), ..., DQ(x_n) -> [Concat axis 1] -> Mul(., per-channel constant) -> Add(., per-
//       channel constant) -> [Relu | Clip] -> Q (channel_map_fusion.h)
//                                                   => QLinearChannelMap, a table per channel
//   (m) DQ(x) -> a chain of elementwise float ops of x alone (Add / Sub / Mul / Div by chain
//       values or scalar constants, Relu, Clip, HardSigmoid, HardSwish, LeakyRelu) -> Q, where
//       no pattern above matched (elementwise_lookup.h)   => QLinearLookup, a 256-byte table
// Every float intermediate of a group must have that group as its only reader. The
// integer node's output keeps the QuantizeLinear output's name (so observers see the
// same int8 tensors as in simulated quantization), and QuantParams are written into
// the types of the int8 values and constants it reads. Groups that do not match (e.g.
// ConvTranspose, per-tensor params that are not constants, ops without an int8 form)
// keep running as DQ -> float op -> Q. DequantizeLinear nodes left without readers are
// removed. Then (LoweringOptions::fold_clamps) a QLinearClamp that is the only reader of a
// QLinearUnit's, QLinearAdd's or QLinearMul's int8 output (the `bn` level's separate Relu /
// Clip) is folded into that node as a byte map after its own requantization (int8_ops.h,
// kFolded*): the same bytes, without the intermediate tensor.
#ifndef QFUSE_RUNTIME_INT8_QDQ_LOWERING_H_
#define QFUSE_RUNTIME_INT8_QDQ_LOWERING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "numerics/requantize.h"

namespace qfuse::runtime::int8 {

struct LoweringOptions {
  numerics::RequantizeMode mode = numerics::RequantizeMode::kOnnx;
  bool fold_clamps = true;
};

struct LoweringStats {
  int64_t units = 0;           // (a)
  int64_t adds = 0;            // (b)
  int64_t muls = 0;            // (b')
  int64_t clamps = 0;          // (c)
  int64_t pass_through = 0;    // (d)
  int64_t average_pools = 0;   // (e)
  int64_t concats = 0;         // (f)
  int64_t activation_matmuls = 0;  // (g)
  int64_t layer_norms = 0;     // (h)
  int64_t activation_softmaxes = 0;  // (i)
  int64_t gelus = 0;           // (j)
  int64_t activation_lookups = 0;  // (k)
  int64_t channel_maps = 0;        // (l)
  int64_t elementwise_lookups = 0;  // (m)
  int64_t folded_clamps = 0;   // QLinearClamps folded into the node before them
  int64_t removed_nodes = 0;   // Q, DQ and float ops replaced
};

// True when `graph` has a QuantizeLinear or DequantizeLinear node.
bool HasQdqNodes(const ir::Graph& graph);

// Rewrites `graph` in place (units must already be expanded).
absl::StatusOr<LoweringStats> LowerQdqToInteger(ir::Graph* graph, const LoweringOptions& options = {});

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_QDQ_LOWERING_H_
