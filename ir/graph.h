// The qfuse graph IR: values (typed edges, optionally constant), nodes (typed ops with
// attributes), use lists, topological order and structural verification.
#ifndef QFUSE_IR_GRAPH_H_
#define QFUSE_IR_GRAPH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/attribute.h"
#include "ir/tensor.h"
#include "ir/tensor_type.h"

namespace qfuse::ir {

class Node;

// Node ids (Node::id()) are positive and never reused within a graph (clones keep them).
using NodeId = int64_t;
inline constexpr NodeId kNoNode = 0;

// One consumer of a value: `node`'s input number `input_index`.
struct Use {
  Node* node;
  int input_index;
  bool operator==(const Use& o) const { return node == o.node && input_index == o.input_index; }
};

// A named tensor flowing through the graph. Exactly one of: a graph input, a
// constant (initializer), or the output of one node.
class Value {
 public:
  int64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  const TensorType& type() const { return type_; }
  TensorType& mutable_type() { return type_; }

  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }

  bool is_constant() const { return initializer_ != nullptr; }
  const Tensor* initializer() const { return initializer_.get(); }
  bool is_graph_input() const { return is_graph_input_; }
  bool is_graph_output() const { return is_graph_output_; }

 private:
  friend class Graph;
  int64_t id_ = 0;
  std::string name_;
  TensorType type_;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Use> uses_;
  // Immutable once set, so a Clone shares it instead of copying the weights.
  std::shared_ptr<const Tensor> initializer_;
  bool is_graph_input_ = false;
  bool is_graph_output_ = false;
};

// One operator application. Inputs may hold nullptr for an omitted optional input.
class Node {
 public:
  int64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  // Input i, or nullptr when absent or omitted.
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  const AttributeMap& attrs() const { return attrs_; }
  AttributeMap& mutable_attrs() { return attrs_; }

  // "name (OpType)" for messages.
  std::string Describe() const;

 private:
  friend class Graph;
  int64_t id_ = 0;
  std::string name_;
  std::string op_type_;
  std::string domain_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  AttributeMap attrs_;
};

// A default-domain node whose op type is one of `ops`.
bool IsAnyOf(const Node& n, absl::Span<const char* const> ops);

// A Cast to its input's own (known) type: a copy. A float16 model's Casts become these once it is
// imported as float32; onnxruntime removes them.
bool IsCastToOwnType(const Node& n);

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // Copy with the same names, ids and node order; constants (immutable) are shared, not copied.
  std::unique_ptr<Graph> Clone() const;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // --- Construction. Names must be unique among values. Node names are unique too (ONNX
  // Runtime refuses a model with two nodes of one name): a name already taken by another node
  // gets a "_N" suffix; an empty node name is allowed and stays empty.
  absl::StatusOr<Value*> AddInput(const std::string& name, TensorType type);
  absl::StatusOr<Value*> AddConstant(const std::string& name, Tensor tensor);
  // Adds a node whose outputs are new values named `output_names` (types unknown
  // until set). `inputs` may contain nullptr for omitted optional inputs.
  absl::StatusOr<Node*> AddNode(const std::string& op_type, const std::string& name,
                                absl::Span<Value* const> inputs,
                                absl::Span<const std::string> output_names,
                                AttributeMap attrs = {}, const std::string& domain = "");
  absl::Status MarkOutput(Value* value);
  // A value name not used yet, derived from `base`.
  std::string UniqueValueName(const std::string& base) const;
  // A node name not used yet, derived from `base` ("" stays "").
  std::string UniqueNodeName(const std::string& base) const;

  // --- Mutation.
  void SetInput(Node* node, int index, Value* value);  // grows inputs with nullptr if needed.
  void AppendInput(Node* node, Value* value);
  void RemoveTrailingNullInputs(Node* node);
  // Rewires every use of `from` (and graph-output status) to `to`.
  void ReplaceAllUsesWith(Value* from, Value* to);
  // Removes a node whose outputs have no uses and are not graph outputs.
  absl::Status RemoveNode(Node* node);
  // Replaces a constant's data (dtype and dims may change; the value's type follows).
  void SetConstantData(Value* value, Tensor tensor);
  // Changes a node's operator (for rewrites between equivalent signatures).
  void SetOpType(Node* node, const std::string& op_type) { node->op_type_ = op_type; }
  // Renames a node; `new_name` must not name another node ("" is allowed). Rewrites that
  // replace a node use it to hand the old node's name to the new one once the old is gone.
  absl::Status RenameNode(Node* node, const std::string& new_name);
  // Renames a value; `new_name` must be unused.
  absl::Status RenameValue(Value* value, const std::string& new_name);
  // Drops a node's outputs from `count` on; they must be unused.
  absl::Status TruncateOutputs(Node* node, size_t count);
  // Removes constants that nothing reads; returns how many.
  int RemoveUnusedConstants();
  // Removes constants and nodes that no graph output depends on.
  int RemoveDeadCode();

  // --- Queries.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  // Nodes in insertion order (not necessarily topological).
  std::vector<Node*> nodes() const;
  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size()); }
  // Constants in insertion order.
  std::vector<Value*> constants() const;
  Value* FindValue(const std::string& name) const;
  // The node with id `id`, or nullptr once it is removed (rewrites refer to nodes by id, so
  // a match made on a const graph is resolved to mutable nodes only by the rewrite).
  Node* FindNode(NodeId id) { return FindNodeImpl(id); }
  const Node* FindNode(NodeId id) const { return FindNodeImpl(id); }

  // Kahn order, ties broken by insertion order, so it is deterministic. Fails on a cycle.
  absl::StatusOr<std::vector<Node*>> TopologicalOrder() const;

  // Checks ids, names, use lists, producers, that every input is defined, that the
  // graph is acyclic and that constant types match their data.
  absl::Status Verify() const;

 private:
  Value* NewValue(const std::string& name);
  Node* FindNodeImpl(NodeId id) const;

  std::string name_;
  int64_t next_id_ = 1;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  absl::flat_hash_map<std::string, Value*> values_by_name_;
  absl::flat_hash_set<std::string> node_names_;  // non-empty node names
  absl::flat_hash_map<NodeId, Node*> nodes_by_id_;
};

}  // namespace qfuse::ir

#endif  // QFUSE_IR_GRAPH_H_
