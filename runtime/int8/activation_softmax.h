// Pattern (i) of the QDQ lowering (runtime/int8/qdq_lowering.h): Softmax(DQ(x)) -> Q with x
// and y per-tensor UINT8 activations => qfuse's QLinearSoftmax (int8_ops.h), which computes
// onnxruntime's com.microsoft.QLinearSoftmax. onnxruntime's QDQ fusion turns the same group
// into that op whenever input and output share a type, so the two runtimes then write the same
// bytes where qfuse's float Softmax between the two rounded differently now and then (ViT-tiny,
// docs/zoo.md). Mode kOnnx only; any other group keeps its float Softmax.
#ifndef QFUSE_RUNTIME_INT8_ACTIVATION_SOFTMAX_H_
#define QFUSE_RUNTIME_INT8_ACTIVATION_SOFTMAX_H_

#include <optional>

#include "ir/graph.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/group_replacer.h"
#include "runtime/int8/qdq_operands.h"

namespace qfuse::runtime::int8 {

struct ActivationSoftmaxMatch {
  ir::NodeId softmax = ir::kNoNode;
  DqOperand x;
  Sink sink;
};

class ActivationSoftmaxPattern : public ir::rewrite::Pattern<ActivationSoftmaxMatch> {
 public:
  explicit ActivationSoftmaxPattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<ActivationSoftmaxMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const ActivationSoftmaxMatch& m) const override;

 private:
  const Replacer& replacer_;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_ACTIVATION_SOFTMAX_H_
