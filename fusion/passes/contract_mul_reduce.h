// Sum-of-products lowering shared by the contraction passes, and the pass that turns
// ReduceSum(Mul(a, b)) over axes both operands share into Transpose/Reshape/MatMul.
//
// ContractionEmitter builds out[out_labels] = sum over every other label of the product
// of one or two labelled operands, from Transpose, Reshape, Squeeze, Unsqueeze,
// ReduceSum, Mul and MatMul only (no Einsum). Labels are ints naming axes; a label
// shared by both operands and kept is a batch axis, shared and not kept is contracted
// (MatMul's K), found in one operand only is a free axis (M or N). Without a
// contracted label the product is a broadcast Mul. Symbolic dims are supported as far
// as Reshape can express them (a copied leading dim, or one -1).
#ifndef QFUSE_FUSION_PASSES_CONTRACT_MUL_REDUCE_H_
#define QFUSE_FUSION_PASSES_CONTRACT_MUL_REDUCE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fusion/pass.h"

namespace qfuse::fusion {

// A size-1 axis that broadcasts (it carries no label and is squeezed away).
inline constexpr int kBroadcastAxis = -1;

struct LabelledValue {
  ir::Value* value = nullptr;  // nullptr during a dry run
  std::vector<int> labels;     // one per axis of value
};

class ContractionEmitter {
 public:
  // `graph` == nullptr is a dry run: feasibility and cost only, the graph is untouched.
  // `dims` gives the size of every label; `dtype` is the element type of every result.
  ContractionEmitter(ir::Graph* graph, std::string base_name, std::map<int, ir::Dim> dims, ir::DataType dtype);

  // Sums the product of `operands` (1 or 2; no label repeated within one operand)
  // over every label not in `out`; the result's axes follow `out`, whose labels must
  // each appear in an operand.
  absl::StatusOr<LabelledValue> Contract(std::vector<LabelledValue> operands, const std::vector<int>& out);

  // Reshapes `t` to `dims` (same element count); no node when the dims already match.
  absl::StatusOr<ir::Value*> ReshapeTo(const LabelledValue& t, const std::vector<ir::Dim>& dims);

  // Elements written by the emitted Transpose, ReduceSum, Mul and MatMul nodes (the
  // shape-only ops are views); symbolic dims count as 1.
  int64_t materialized() const { return materialized_; }
  int64_t nodes() const { return nodes_; }

 private:
  std::vector<ir::Dim> DimsOf(const std::vector<int>& labels) const;
  int64_t Count(const std::vector<int>& labels) const;
  absl::StatusOr<LabelledValue> Emit(const std::string& op, std::vector<ir::Value*> inputs, std::vector<int> labels,
                                     bool materializes);
  absl::StatusOr<LabelledValue> EmitWithAttrs(const std::string& op, std::vector<ir::Value*> inputs,
                                              std::vector<int> labels, bool materializes, ir::AttributeMap attrs);
  absl::StatusOr<LabelledValue> ReshapeLabels(const LabelledValue& t, std::vector<int> labels);
  absl::StatusOr<ir::Value*> Int64s(const std::string& what, const std::vector<int64_t>& values);
  absl::StatusOr<LabelledValue> Transpose(const LabelledValue& t, const std::vector<int>& order);
  absl::StatusOr<LabelledValue> RemoveAxes(const LabelledValue& t, const std::vector<int>& labels);
  absl::StatusOr<LabelledValue> Regroup(const LabelledValue& t, const std::vector<std::vector<int>>& groups);
  absl::StatusOr<LabelledValue> BroadcastMul(const LabelledValue& a, const LabelledValue& b,
                                             const std::vector<int>& out);
  int NewLabel(ir::Dim dim);

  ir::Graph* graph_;
  std::string base_;
  std::map<int, ir::Dim> dims_;
  ir::DataType dtype_;
  int next_label_ = 1 << 20;
  int64_t materialized_ = 0;
  int64_t nodes_ = 0;
};

struct ContractMulReduceOptions {
  // Rewrite only when the MatMul form writes fewer elements than the Mul it replaces
  // (both do the same multiply-adds; the Mul materialises the full broadcast product).
  bool only_when_fewer_elements = true;
};

struct MulReduceMatch {
  ir::NodeId mul;
  ir::NodeId reduce;
};

class ContractMulReducePass : public PatternPass<MulReduceMatch> {
 public:
  explicit ContractMulReducePass(ContractMulReduceOptions options = {}) : options_(options) {}
  std::string name() const override { return "contract_mul_reduce"; }

 protected:
  std::vector<std::string> AnchorOps() const override { return {"ReduceSum"}; }
  std::optional<MulReduceMatch> Match(const ir::Graph& graph, const ir::Node& anchor) const override;
  absl::Status Rewrite(ir::Graph* graph, const MulReduceMatch& match) const override;

 private:
  ContractMulReduceOptions options_;
};

}  // namespace qfuse::fusion

#endif  // QFUSE_FUSION_PASSES_CONTRACT_MUL_REDUCE_H_
