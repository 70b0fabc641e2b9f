// Pattern (j) of the QDQ lowering (runtime/int8/qdq_lowering.h): GELU as exporters before
// opset 20 write it, in a float region of a QDQ graph,
//   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)        (PyTorch's order)
//   y = Mul(Mul(x, 0.5), Add(Erf(Div(x, sqrt 2)), 1))
// (either operand order of each Add and Mul) => one qfuse.Gelu(x) (int8_ops.h kGeluOp): one
// pass over the tensor instead of five, computed as onnxruntime computes the chain:
//  - x written by a DequantizeLinear: onnxruntime gives each reader of a DequantizeLinear its
//    own copy (its QDQ node units), so the Div and the Mul no longer read one value and its
//    GeluFusion leaves the five ops; qfuse.Gelu then computes them as they are (ir::GeluChain:
//    the same divisor and Mul order, each op rounded on its own);
//  - otherwise (x from a float op, e.g. a bias Add at level bn): onnxruntime's GeluFusion makes
//    its Gelu kernel, (0.5 * x) * (erf(x * 0.70710678) + 1) (ir::Gelu), which differs from the
//    five ops (dividing by sqrt 2) by an ulp on some inputs; qfuse.Gelu computes that. Taken only where x and every intermediate are FLOAT, each intermediate is
// read by the chain alone and is not a graph output, and the constants are one-element FLOAT
// constants (of rank 0, or rank <= 1 where x's rank is known and >= 1, so that broadcasting
// them leaves x's shape): the divisor within 1e-6 of sqrt 2, the addend 1, the factor 0.5.
#ifndef QFUSE_RUNTIME_INT8_GELU_FUSION_H_
#define QFUSE_RUNTIME_INT8_GELU_FUSION_H_

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/group_replacer.h"

namespace qfuse::runtime::int8 {

struct GeluMatch {
  std::vector<ir::NodeId> chain;  // Div first, the node writing y last
  ir::Value* x = nullptr;
  bool as_chain = false;  // x from a DequantizeLinear: the five ops' arithmetic
  float divisor = 0.f;
  bool half_first = false;
};

class GeluPattern : public ir::rewrite::Pattern<GeluMatch> {
 public:
  explicit GeluPattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<GeluMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const GeluMatch& m) const override;

 private:
  const Replacer& replacer_;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_GELU_FUSION_H_
