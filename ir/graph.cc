#include "ir/graph.h"

#include <algorithm>
#include <queue>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/data_type.h"

namespace qfuse::ir {

bool IsAnyOf(const Node& n, absl::Span<const char* const> ops) {
  if (!n.domain().empty()) return false;
  for (const char* op : ops) {
    if (n.op_type() == op) return true;
  }
  return false;
}

bool IsCastToOwnType(const Node& n) {
  if (!IsAnyOf(n, {"Cast"}) || n.input(0) == nullptr || n.input(0)->type().dtype == DataType::kUndefined) return false;
  const absl::StatusOr<int64_t> to = n.attrs().GetInt("to", 0);
  if (!to.ok()) return false;
  const absl::StatusOr<DataType> target = DataTypeFromOnnx(static_cast<int32_t>(*to));
  return target.ok() && *target == n.input(0)->type().dtype;
}

std::string Node::Describe() const {
  return absl::StrCat("node '", name_, "' (", op_type_, ")");
}

Value* Graph::NewValue(const std::string& name) {
  auto value = std::make_unique<Value>();
  value->id_ = next_id_++;
  value->name_ = name;
  Value* raw = value.get();
  values_.push_back(std::move(value));
  values_by_name_[name] = raw;
  return raw;
}

std::string Graph::UniqueValueName(const std::string& base) const {
  if (!values_by_name_.contains(base)) return base;
  for (int64_t i = 1;; ++i) {
    std::string candidate = absl::StrCat(base, "_", i);
    if (!values_by_name_.contains(candidate)) return candidate;
  }
}

std::string Graph::UniqueNodeName(const std::string& base) const {
  if (base.empty() || !node_names_.contains(base)) return base;
  for (int64_t i = 1;; ++i) {
    std::string candidate = absl::StrCat(base, "_", i);
    if (!node_names_.contains(candidate)) return candidate;
  }
}

absl::StatusOr<Value*> Graph::AddInput(const std::string& name, TensorType type) {
  if (name.empty() || values_by_name_.contains(name)) {
    return absl::InvalidArgumentError(absl::StrCat("graph input name '", name, "' is empty or already used"));
  }
  Value* v = NewValue(name);
  v->type_ = std::move(type);
  v->is_graph_input_ = true;
  inputs_.push_back(v);
  return v;
}

absl::StatusOr<Value*> Graph::AddConstant(const std::string& name, Tensor tensor) {
  if (name.empty() || values_by_name_.contains(name)) {
    return absl::InvalidArgumentError(absl::StrCat("constant name '", name, "' is empty or already used"));
  }
  Value* v = NewValue(name);
  SetConstantData(v, std::move(tensor));
  return v;
}

void Graph::SetConstantData(Value* value, Tensor tensor) {
  value->type_.dtype = tensor.dtype();
  value->type_.shape = Shape::FromDims(tensor.dims());
  value->initializer_ = std::make_shared<const Tensor>(std::move(tensor));
}

absl::StatusOr<Node*> Graph::AddNode(const std::string& op_type, const std::string& name,
                                     absl::Span<Value* const> inputs,
                                     absl::Span<const std::string> output_names,
                                     AttributeMap attrs, const std::string& domain) {
  for (const std::string& out : output_names) {
    if (values_by_name_.contains(out)) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", name, "' (", op_type, "): output name '", out, "' is already defined"));
    }
  }
  auto node = std::make_unique<Node>();
  node->id_ = next_id_++;
  node->name_ = UniqueNodeName(name);
  if (!node->name_.empty()) node_names_.insert(node->name_);
  node->op_type_ = op_type;
  node->domain_ = domain;
  node->attrs_ = std::move(attrs);
  Node* raw = node.get();
  nodes_.push_back(std::move(node));
  nodes_by_id_[raw->id_] = raw;
  for (Value* in : inputs) AppendInput(raw, in);
  for (size_t i = 0; i < output_names.size(); ++i) {
    if (output_names[i].empty()) {
      raw->outputs_.push_back(nullptr);  // omitted optional output
      continue;
    }
    Value* v = NewValue(output_names[i]);
    v->producer_ = raw;
    v->producer_output_ = static_cast<int>(i);
    raw->outputs_.push_back(v);
  }
  return raw;
}

absl::Status Graph::MarkOutput(Value* value) {
  if (value->is_graph_output_) {
    return absl::InvalidArgumentError(absl::StrCat("value '", value->name(), "' is already a graph output"));
  }
  value->is_graph_output_ = true;
  outputs_.push_back(value);
  return absl::OkStatus();
}

void Graph::AppendInput(Node* node, Value* value) {
  node->inputs_.push_back(value);
  if (value != nullptr) value->uses_.push_back({node, static_cast<int>(node->inputs_.size() - 1)});
}

void Graph::SetInput(Node* node, int index, Value* value) {
  if (index >= static_cast<int>(node->inputs_.size())) node->inputs_.resize(index + 1, nullptr);
  Value* old = node->inputs_[index];
  if (old != nullptr) {
    auto& uses = old->uses_;
    uses.erase(std::find(uses.begin(), uses.end(), Use{node, index}));
  }
  node->inputs_[index] = value;
  if (value != nullptr) value->uses_.push_back({node, index});
}

void Graph::RemoveTrailingNullInputs(Node* node) {
  while (!node->inputs_.empty() && node->inputs_.back() == nullptr) node->inputs_.pop_back();
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Use> uses = from->uses_;
  for (const Use& use : uses) SetInput(use.node, use.input_index, to);
  if (from->is_graph_output_) {
    for (Value*& out : outputs_) {
      if (out == from) out = to;
    }
    from->is_graph_output_ = false;
    to->is_graph_output_ = true;
  }
}

absl::Status Graph::RemoveNode(Node* node) {
  for (Value* out : node->outputs_) {
    if (out != nullptr && (!out->uses_.empty() || out->is_graph_output_)) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot remove ", node->Describe(), ": output '", out->name(), "' is still used"));
    }
  }
  for (int i = 0; i < static_cast<int>(node->inputs_.size()); ++i) SetInput(node, i, nullptr);
  absl::flat_hash_set<const Value*> dead;
  for (Value* out : node->outputs_) {
    if (out != nullptr) {
      dead.insert(out);
      values_by_name_.erase(out->name());
    }
  }
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [&](const std::unique_ptr<Value>& v) { return dead.contains(v.get()); }),
                values_.end());
  node_names_.erase(node->name_);
  nodes_by_id_.erase(node->id_);
  nodes_.erase(std::find_if(nodes_.begin(), nodes_.end(),
                            [&](const std::unique_ptr<Node>& n) { return n.get() == node; }));
  return absl::OkStatus();
}

absl::Status Graph::RenameNode(Node* node, const std::string& new_name) {
  if (new_name == node->name_) return absl::OkStatus();
  if (!new_name.empty() && node_names_.contains(new_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot rename ", node->Describe(), " to '", new_name, "': another node has that name"));
  }
  node_names_.erase(node->name_);
  node->name_ = new_name;
  if (!new_name.empty()) node_names_.insert(new_name);
  return absl::OkStatus();
}

absl::Status Graph::RenameValue(Value* value, const std::string& new_name) {
  if (new_name == value->name_) return absl::OkStatus();
  if (new_name.empty() || values_by_name_.contains(new_name)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot rename '", value->name_, "' to '", new_name,
                                                   "': name empty or in use"));
  }
  values_by_name_.erase(value->name_);
  value->name_ = new_name;
  values_by_name_[new_name] = value;
  return absl::OkStatus();
}

absl::Status Graph::TruncateOutputs(Node* node, size_t count) {
  absl::flat_hash_set<const Value*> dropped;
  for (size_t i = count; i < node->outputs_.size(); ++i) {
    Value* out = node->outputs_[i];
    if (out == nullptr) continue;
    if (!out->uses_.empty() || out->is_graph_output_) {
      return absl::FailedPreconditionError(
          absl::StrCat(node->Describe(), ": output '", out->name_, "' is used and cannot be dropped"));
    }
    dropped.insert(out);
    values_by_name_.erase(out->name_);
  }
  if (node->outputs_.size() > count) node->outputs_.resize(count);
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [&](const std::unique_ptr<Value>& v) { return dropped.contains(v.get()); }),
                values_.end());
  return absl::OkStatus();
}

int Graph::RemoveUnusedConstants() {
  const size_t before = values_.size();
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [&](const std::unique_ptr<Value>& v) {
                                 const bool unused = v->is_constant() && v->uses_.empty() && !v->is_graph_output_;
                                 if (unused) values_by_name_.erase(v->name());
                                 return unused;
                               }),
                values_.end());
  return static_cast<int>(before - values_.size());
}

int Graph::RemoveDeadCode() {
  absl::flat_hash_set<const Node*> live;
  std::vector<Value*> stack(outputs_.begin(), outputs_.end());
  while (!stack.empty()) {
    Value* v = stack.back();
    stack.pop_back();
    Node* producer = v->producer_;
    if (producer == nullptr || !live.insert(producer).second) continue;
    for (Value* in : producer->inputs_) {
      if (in != nullptr) stack.push_back(in);
    }
  }
  // A dead node's outputs feed only dead nodes, so detaching every dead node's inputs
  // first leaves all of them removable.
  std::vector<Node*> dead_nodes;
  for (const auto& n : nodes_) {
    if (!live.contains(n.get())) dead_nodes.push_back(n.get());
  }
  for (Node* n : dead_nodes) {
    for (int i = 0; i < static_cast<int>(n->inputs_.size()); ++i) SetInput(n, i, nullptr);
  }
  for (Node* n : dead_nodes) RemoveNode(n).IgnoreError();
  const int removed = static_cast<int>(dead_nodes.size());
  RemoveUnusedConstants();
  return removed;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Value*> Graph::constants() const {
  std::vector<Value*> out;
  for (const auto& v : values_) {
    if (v->is_constant()) out.push_back(v.get());
  }
  return out;
}

Node* Graph::FindNodeImpl(NodeId id) const {
  auto it = nodes_by_id_.find(id);
  return it == nodes_by_id_.end() ? nullptr : it->second;
}

Value* Graph::FindValue(const std::string& name) const {
  auto it = values_by_name_.find(name);
  return it == values_by_name_.end() ? nullptr : it->second;
}

absl::StatusOr<std::vector<Node*>> Graph::TopologicalOrder() const {
  absl::flat_hash_map<const Node*, int> pending;  // producers not yet emitted
  absl::flat_hash_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node* n = nodes_[i].get();
    position[n] = i;
    int count = 0;
    for (const Value* in : n->inputs_) {
      if (in != nullptr && in->producer_ != nullptr) ++count;
    }
    pending[n] = count;
  }
  auto later = [&](const Node* a, const Node* b) { return position[a] > position[b]; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  for (const auto& n : nodes_) {
    if (pending[n.get()] == 0) ready.push(n.get());
  }
  std::vector<Node*> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    order.push_back(n);
    for (Value* out : n->outputs_) {
      if (out == nullptr) continue;
      for (const Use& use : out->uses_) {
        if (--pending[use.node] == 0) ready.push(use.node);
      }
    }
  }
  if (order.size() != nodes_.size()) {
    for (const auto& n : nodes_) {
      if (pending[n.get()] > 0) {
        return absl::InvalidArgumentError(absl::StrCat("graph has a cycle through ", n->Describe()));
      }
    }
  }
  return order;
}

absl::Status Graph::Verify() const {
  absl::flat_hash_set<int64_t> ids;
  absl::flat_hash_set<const Value*> known_values;
  for (const auto& v : values_) {
    known_values.insert(v.get());
    if (!ids.insert(v->id_).second) return absl::InternalError(absl::StrCat("duplicate id ", v->id_));
    auto it = values_by_name_.find(v->name_);
    if (it == values_by_name_.end() || it->second != v.get()) {
      return absl::InternalError(absl::StrCat("value '", v->name_, "' missing from the name index"));
    }
    const int sources = (v->is_graph_input_ ? 1 : 0) + (v->is_constant() ? 1 : 0) + (v->producer_ ? 1 : 0);
    if (sources != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("value '", v->name_, "' must have exactly one source (input, constant or node), has ", sources));
    }
    if (v->is_constant()) {
      const Tensor& t = *v->initializer_;
      if (v->type_.dtype != t.dtype() || !(v->type_.shape == Shape::FromDims(t.dims()))) {
        return absl::InvalidArgumentError(absl::StrCat("constant '", v->name_, "' type ", v->type_.ToString(),
                                                       " does not match its data"));
      }
    }
    for (const Use& use : v->uses_) {
      if (use.node->input(use.input_index) != v.get()) {
        return absl::InternalError(absl::StrCat("stale use of '", v->name_, "' by ", use.node->Describe()));
      }
    }
  }
  if (values_by_name_.size() != values_.size()) return absl::InternalError("name index out of sync");
  absl::flat_hash_set<std::string> node_names;
  for (const auto& n : nodes_) {
    if (!ids.insert(n->id_).second) return absl::InternalError(absl::StrCat("duplicate id ", n->id_));
    if (!n->name_.empty() && !node_names.insert(n->name_).second) {
      return absl::InvalidArgumentError(absl::StrCat("two nodes are named '", n->name_, "'"));
    }
    for (size_t i = 0; i < n->inputs_.size(); ++i) {
      const Value* in = n->inputs_[i];
      if (in == nullptr) continue;
      if (!known_values.contains(in)) {
        return absl::InvalidArgumentError(absl::StrCat(n->Describe(), ": input ", i, " is not defined in the graph"));
      }
      const auto& uses = in->uses_;
      if (std::find(uses.begin(), uses.end(), Use{n.get(), static_cast<int>(i)}) == uses.end()) {
        return absl::InternalError(absl::StrCat(n->Describe(), ": input '", in->name_, "' lacks a use entry"));
      }
    }
    for (size_t i = 0; i < n->outputs_.size(); ++i) {
      const Value* out = n->outputs_[i];
      if (out != nullptr && (out->producer_ != n.get() || out->producer_output_ != static_cast<int>(i))) {
        return absl::InternalError(absl::StrCat(n->Describe(), ": output ", i, " has a wrong producer link"));
      }
    }
  }
  for (const Value* out : outputs_) {
    if (!known_values.contains(out) || !out->is_graph_output_) {
      return absl::InvalidArgumentError("a graph output is not a value of the graph");
    }
  }
  // Element types of quantized values must be integer.
  for (const auto& v : values_) {
    if (v->type_.quant.has_value() && v->type_.dtype != DataType::kInt8 &&
        v->type_.dtype != DataType::kUint8 && v->type_.dtype != DataType::kInt32) {
      return absl::InvalidArgumentError(absl::StrCat("value '", v->name_, "' has quantization parameters but dtype ",
                                                     DataTypeName(v->type_.dtype)));
    }
  }
  return TopologicalOrder().status();  // fails on a cycle
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto copy = std::make_unique<Graph>();
  copy->name_ = name_;
  copy->next_id_ = next_id_;
  absl::flat_hash_map<const Value*, Value*> value_map;
  for (const auto& v : values_) {
    auto nv = std::make_unique<Value>();
    nv->id_ = v->id_;
    nv->name_ = v->name_;
    nv->type_ = v->type_;
    nv->producer_output_ = v->producer_output_;
    nv->initializer_ = v->initializer_;  // shared: constants are never changed in place
    nv->is_graph_input_ = v->is_graph_input_;
    nv->is_graph_output_ = v->is_graph_output_;
    value_map[v.get()] = nv.get();
    copy->values_by_name_[nv->name_] = nv.get();
    copy->values_.push_back(std::move(nv));
  }
  for (const auto& n : nodes_) {
    auto nn = std::make_unique<Node>();
    nn->id_ = n->id_;
    nn->name_ = n->name_;
    if (!nn->name_.empty()) copy->node_names_.insert(nn->name_);
    nn->op_type_ = n->op_type_;
    nn->domain_ = n->domain_;
    nn->attrs_ = n->attrs_;
    Node* raw = nn.get();
    copy->nodes_.push_back(std::move(nn));
    copy->nodes_by_id_[raw->id_] = raw;
    for (Value* in : n->inputs_) copy->AppendInput(raw, in ? value_map[in] : nullptr);
    for (Value* out : n->outputs_) {
      Value* mapped = out ? value_map[out] : nullptr;
      if (mapped) mapped->producer_ = raw;
      raw->outputs_.push_back(mapped);
    }
  }
  for (Value* in : inputs_) copy->inputs_.push_back(value_map[in]);
  for (Value* out : outputs_) copy->outputs_.push_back(value_map[out]);
  return copy;
}

}  // namespace qfuse::ir
