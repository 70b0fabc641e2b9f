#include "ir/node_order.h"

#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace qfuse::ir {
namespace {

// Every value name that `node`'s subgraphs (and theirs) read.
void AddSubgraphInputs(const onnx::NodeProto& node, absl::flat_hash_set<std::string>* names) {
  const std::function<void(const onnx::GraphProto&)> visit = [&](const onnx::GraphProto& g) {
    for (const onnx::NodeProto& inner : g.node()) {
      for (const std::string& in : inner.input()) names->insert(in);
      for (const onnx::AttributeProto& attr : inner.attribute()) {
        if (attr.has_g()) visit(attr.g());
        for (const onnx::GraphProto& sub : attr.graphs()) visit(sub);
      }
    }
  };
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.has_g()) visit(attr.g());
    for (const onnx::GraphProto& sub : attr.graphs()) visit(sub);
  }
}

}  // namespace

bool SortNodesTopologically(onnx::GraphProto* graph) {
  const int n = graph->node_size();
  absl::flat_hash_map<std::string, int> producer;  // value name -> node index
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : graph->node(i).output()) {
      if (!out.empty()) producer.emplace(out, i);
    }
  }
  // Edges from each producer to the nodes that read its outputs (one per distinct pair).
  std::vector<std::vector<int>> readers(n);
  std::vector<int> waiting(n, 0);  // producers not yet placed
  bool sorted = true;
  for (int i = 0; i < n; ++i) {
    absl::flat_hash_set<std::string> names(graph->node(i).input().begin(), graph->node(i).input().end());
    AddSubgraphInputs(graph->node(i), &names);
    absl::flat_hash_set<int> producers;
    for (const std::string& name : names) {
      const auto it = producer.find(name);
      if (it != producer.end() && it->second != i) producers.insert(it->second);
    }
    for (const int p : producers) {
      readers[p].push_back(i);
      ++waiting[i];
      sorted = sorted && p < i;
    }
  }
  if (sorted) return true;
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // lowest file position first
  for (int i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (const int r : readers[i]) {
      if (--waiting[r] == 0) ready.push(r);
    }
  }
  if (static_cast<int>(order.size()) != n) return false;  // a cycle
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  nodes.Reserve(n);
  for (const int i : order) nodes.Add(std::move(*graph->mutable_node(i)));
  graph->mutable_node()->Swap(&nodes);
  return true;
}

}  // namespace qfuse::ir
