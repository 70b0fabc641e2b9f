// Pattern (l) of the QDQ lowering (runtime/int8/qdq_lowering.h): a batch norm that did not
// fold, before its clamp, between requantizations,
//     DQ(x_0), ..., DQ(x_n) -> [Concat axis 1] -> Mul(c, scale) -> Add(., shift) -> [Relu | Clip] -> Q
// with per-tensor INT8/UINT8 4-D x_i and FLOAT constants of one value or one per channel
// ([C, 1, 1] or [1, C, 1, 1]) => qfuse's QLinearChannelMap (int8_ops.h): one 256-byte table per
// output channel, computed with the float ops' own arithmetic, instead of five float passes
// (DenseNet's pre-activation BatchNorm + ReLU after each Concat). A Concat input that is not
// quantized (a FLOAT value: DenseNet's transition AveragePool) stays FLOAT and its channels are
// computed with those float ops.
// And the rewrite that opens it to DenseNet's stem pool: a float MaxPool(DQ(x)) that no
// QuantizeLinear of x's parameters reads (pattern (d) takes those) becomes DQ(MaxPool(x)), the
// pool on the bytes: the same values, since DequantizeLinear is monotonic.
#ifndef QFUSE_RUNTIME_INT8_CHANNEL_MAP_FUSION_H_
#define QFUSE_RUNTIME_INT8_CHANNEL_MAP_FUSION_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/fused_unit.h"
#include "ir/graph.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/group_replacer.h"
#include "runtime/int8/qdq_operands.h"

namespace qfuse::runtime::int8 {

struct ChannelMapMatch {
  std::vector<ir::NodeId> nodes;  // the float ops, last first
  ir::NodeId mul = ir::kNoNode;
  std::vector<std::optional<DqOperand>> inputs;  // nullopt: a FLOAT input, taken as it is
  std::vector<std::string> float_inputs;         // their names (empty for quantized ones)
  std::string scale, shift;                      // the FLOAT constants' names
  std::optional<ir::UnitSpec> clamp;             // kRelu, kRelu6 or kClip
  Sink sink;
};

// Anchored at the Mul.
class ChannelMapPattern : public ir::rewrite::Pattern<ChannelMapMatch> {
 public:
  explicit ChannelMapPattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<ChannelMapMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const ChannelMapMatch& m) const override;

 private:
  const Replacer& replacer_;
};

struct PoolBeforeDequantizeMatch {
  ir::NodeId pool = ir::kNoNode;
  DqOperand x;
};

// Anchored at the MaxPool.
class PoolBeforeDequantizePattern : public ir::rewrite::Pattern<PoolBeforeDequantizeMatch> {
 protected:
  std::optional<PoolBeforeDequantizeMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const PoolBeforeDequantizeMatch& m) const override;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_CHANNEL_MAP_FUSION_H_
