#include "calib/graph_fingerprint.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace qfuse::calib {
namespace {

class Fnv1a64 {
 public:
  void Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
      hash_ ^= p[i];
      hash_ *= 0x100000001b3ull;
    }
  }
  // Length-prefixed, so ("ab","c") and ("a","bc") differ.
  void Text(const std::string& s) {
    Int(static_cast<int64_t>(s.size()));
    Bytes(s.data(), s.size());
  }
  void Int(int64_t v) { Bytes(&v, sizeof(v)); }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

void HashTensor(const ir::Tensor& t, Fnv1a64* h) {
  h->Int(static_cast<int64_t>(t.dtype()));
  h->Int(t.rank());
  for (int64_t d : t.dims()) h->Int(d);
  h->Bytes(t.raw_data(), t.byte_size());
}

void HashAttribute(const ir::AttributeValue& value, Fnv1a64* h) {
  h->Int(static_cast<int64_t>(value.index()));
  if (const auto* i = std::get_if<int64_t>(&value)) h->Int(*i);
  if (const auto* f = std::get_if<float>(&value)) h->Bytes(f, sizeof(float));
  if (const auto* s = std::get_if<std::string>(&value)) h->Text(*s);
  if (const auto* is = std::get_if<std::vector<int64_t>>(&value)) {
    h->Int(static_cast<int64_t>(is->size()));
    for (int64_t v : *is) h->Int(v);
  }
  if (const auto* fs = std::get_if<std::vector<float>>(&value)) {
    h->Int(static_cast<int64_t>(fs->size()));
    h->Bytes(fs->data(), fs->size() * sizeof(float));
  }
  if (const auto* ss = std::get_if<std::vector<std::string>>(&value)) {
    h->Int(static_cast<int64_t>(ss->size()));
    for (const auto& s : *ss) h->Text(s);
  }
  if (const auto* t = std::get_if<ir::Tensor>(&value)) HashTensor(*t, h);
}

}  // namespace

absl::StatusOr<std::string> GraphFingerprint(const ir::Graph& graph) {
  Fnv1a64 h;
  for (const ir::Value* v : graph.inputs()) {
    h.Text(v->name());
    h.Int(static_cast<int64_t>(v->type().dtype));
  }
  for (const ir::Value* v : graph.outputs()) h.Text(v->name());
  QFUSE_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, graph.TopologicalOrder());
  for (const ir::Node* n : order) {
    h.Text(n->op_type());
    h.Text(n->domain());
    h.Text(n->name());
    h.Int(static_cast<int64_t>(n->inputs().size()));
    for (const ir::Value* in : n->inputs()) h.Text(in == nullptr ? "" : in->name());
    h.Int(static_cast<int64_t>(n->outputs().size()));
    for (const ir::Value* out : n->outputs()) h.Text(out == nullptr ? "" : out->name());
    for (const auto& [name, value] : n->attrs().all()) {
      h.Text(name);
      HashAttribute(value, &h);
    }
  }
  for (const ir::Value* c : graph.constants()) {
    h.Text(c->name());
    HashTensor(*c->initializer(), &h);
  }
  return absl::StrFormat("%016x", h.value());
}

}  // namespace qfuse::calib
