// Pattern (h) of the QDQ lowering (runtime/int8/qdq_lowering.h): LayerNormalization as
// exporters before opset 17 write it, in a float region of a QDQ graph,
//   mean = ReduceMean(x, trailing axes); d = Sub(x, mean); var = ReduceMean(Pow(d, 2))
//   y = Add(Mul(Div(d, Sqrt(Add(var, epsilon))), scale), bias)
// => one LayerNormalization(x, scale, bias) over those axes (runtime/kernels/nn). onnxruntime's
// LayerNormFusion rewrites the same chain into its LayerNormalization kernel, so between its
// DequantizeLinear and QuantizeLinear the two runtimes then run one normalisation each, which
// rounds to the same int8 values where the nine float ops did not (docs/zoo.md, CRNN).
// Taken only where every intermediate is FLOAT, read by the chain alone and not a graph
// output, the exponent is the constant 2, epsilon a one-element constant, and scale and bias
// one-dimensional constants, and x is not written by a DequantizeLinear (onnxruntime gives each
// reader of one its own copy, so the ReduceMean and the Sub no longer read one value and its
// LayerNormFusion does not apply; the RMS tail below does); anything else keeps its nine ops.
//
// And the RMS-norm tail onnxruntime's SimplifiedLayerNormFusion takes where the full pattern
// fails (at level none the LayerNorm's bias Add follows a QuantizeLinear, so only the tail is
// one float region): d -> Pow(d, 2) -> ReduceMean (trailing axes) -> Add epsilon -> Sqrt ->
// Div(d, .) -> Mul scale => qfuse.SimplifiedLayerNormalization(d, scale) in onnxruntime's
// arithmetic (kernels/nn/layer_norm_row.h from 16 values a row, its scalar form below).
// Also where the full pattern reads a DequantizeLinear (above). Neither is taken on a chain
// between two Transposes (ConvNeXt's LayerNorm2d), which onnxruntime's transpose optimizer turns
// around and leaves unfused; after a Transpose alone only the RMS tail is (Swin-T's patch
// embedding: onnxruntime moves the Transpose into a channels-last convolution, whose
// DequantizeLinear the chain then reads).
#ifndef QFUSE_RUNTIME_INT8_LAYER_NORM_FUSION_H_
#define QFUSE_RUNTIME_INT8_LAYER_NORM_FUSION_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/rewrite/pattern.h"
#include "runtime/int8/group_replacer.h"

namespace qfuse::runtime::int8 {

struct LayerNormMatch {
  std::vector<ir::NodeId> chain;  // ReduceMean first, the final Add last
  ir::Value* x = nullptr;
  ir::Value* scale = nullptr;
  ir::Value* bias = nullptr;
  int64_t axis = -1;  // negative: the first of the trailing axes
  float epsilon = 0.f;
};

class LayerNormPattern : public ir::rewrite::Pattern<LayerNormMatch> {
 public:
  explicit LayerNormPattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<LayerNormMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const LayerNormMatch& m) const override;

 private:
  const Replacer& replacer_;
};

struct SimplifiedLayerNormMatch {
  std::vector<ir::NodeId> chain;  // Pow first, the Mul last
  ir::Value* x = nullptr;
  ir::Value* scale = nullptr;
  int64_t axis = -1;
  float epsilon = 0.f;
};

class SimplifiedLayerNormPattern : public ir::rewrite::Pattern<SimplifiedLayerNormMatch> {
 public:
  explicit SimplifiedLayerNormPattern(const Replacer& replacer) : replacer_(replacer) {}

 protected:
  std::optional<SimplifiedLayerNormMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const SimplifiedLayerNormMatch& m) const override;

 private:
  const Replacer& replacer_;
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_LAYER_NORM_FUSION_H_
