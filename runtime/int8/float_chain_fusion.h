// The float-chain patterns of the QDQ lowering (runtime/int8/qdq_lowering.h) on a float
// graph: the pre-opset-17 LayerNorm (pattern (h), layer_norm_fusion.h) becomes one
// LayerNormalization and the pre-opset-20 GELU (pattern (j), gelu_fusion.h) one qfuse.Gelu in
// onnxruntime's fused arithmetic, as onnxruntime's LayerNormFusion and GeluFusion rewrite an
// fp32 model; and a per-channel Mul -> Add [-> Relu] (a batch norm that cannot fold) becomes
// one qfuse.ChannelAffine with the same roundings (channel_affine_fusion.h). The chains'
// intermediates are gone afterwards, so runs that observe every value (calibration, per-layer
// analysis) keep the graph as written (ExecutorOptions).
#ifndef QFUSE_RUNTIME_INT8_FLOAT_CHAIN_FUSION_H_
#define QFUSE_RUNTIME_INT8_FLOAT_CHAIN_FUSION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace qfuse::runtime::int8 {

struct FloatChainStats {
  int64_t layer_norms = 0;
  int64_t gelus = 0;
  int64_t channel_affines = 0;
};

// Whether `graph` has a node one of the chains starts at (a cheap test before copying it).
bool HasFloatChainAnchor(const ir::Graph& graph);

// Rewrites `graph` in place; returns how many chains of each kind it replaced.
absl::StatusOr<FloatChainStats> FuseFloatChains(ir::Graph* graph);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_FLOAT_CHAIN_FUSION_H_
