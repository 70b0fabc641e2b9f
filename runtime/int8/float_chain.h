// Matching helpers for the lowering's float-region patterns (layer_norm_fusion.h,
// gelu_fusion.h): chains of standard float ops whose intermediates nothing else reads.
#ifndef QFUSE_RUNTIME_INT8_FLOAT_CHAIN_H_
#define QFUSE_RUNTIME_INT8_FLOAT_CHAIN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "runtime/int8/group_replacer.h"

namespace qfuse::runtime::int8 {

// `n` is a node of the default domain of type `op`.
bool IsOnnxOp(const ir::Node* n, const char* op);
bool IsFloatValue(const ir::Value* v);
// The one node reading `v` (as input `index`), when it is of type `op` and `v` is FLOAT, read
// once and not a graph output; else nullptr.
const ir::Node* SoleReader(const ir::Value* v, const char* op, int index);
// The same for a reader at either input of a binary `op`.
const ir::Node* SoleBinaryReader(const ir::Value* v, const char* op);
// The value of a one-element FLOAT constant.
std::optional<float> ConstantScalar(const ir::Value* v);
// The input of binary `n` that is not `v` (nullptr unless `v` is exactly one of the two).
ir::Value* OtherInput(const ir::Node& n, const ir::Value* v);
// Whether onnxruntime gives each reader of `v` its own copy: `v` is written by a
// DequantizeLinear, which its EnsureUniqueDQForNodeUnit duplicates per reader (its QDQ node
// units). A fusion of onnxruntime's that needs two readers to read one value (LayerNormFusion's
// ReduceMean and Sub, GeluFusion's Div and Mul) then does not apply to `v`.
bool CopiedPerReader(const ir::Value* v);

// Replaces the float ops `chain` (first to last; the last writes the value the chain computes)
// by one node `op_type` of `domain` reading `inputs`: it takes the first op's name and the
// last one's output name, type and readers, and the chain's ops are removed.
absl::Status ReplaceFloatChain(ir::Graph* graph, const Replacer& replacer, const std::vector<ir::NodeId>& chain,
                               const std::string& op_type, const std::vector<ir::Value*>& inputs,
                               ir::AttributeMap attrs, const std::string& domain = "");

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_FLOAT_CHAIN_H_
