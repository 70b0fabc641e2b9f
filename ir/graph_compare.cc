#include "ir/graph_compare.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace qfuse::ir {
namespace {

absl::Status Differ(const std::string& what) { return absl::FailedPreconditionError(what); }

std::string NameOf(const Value* v) { return v == nullptr ? "" : v->name(); }

absl::Status CompareValueLists(const char* what, const std::vector<Value*>& a, const std::vector<Value*>& b) {
  if (a.size() != b.size()) return Differ(absl::StrCat(what, ": count ", a.size(), " vs ", b.size()));
  for (size_t i = 0; i < a.size(); ++i) {
    if (NameOf(a[i]) != NameOf(b[i])) {
      return Differ(absl::StrCat(what, " ", i, ": '", NameOf(a[i]), "' vs '", NameOf(b[i]), "'"));
    }
    if (a[i] != nullptr && !(a[i]->type().dtype == b[i]->type().dtype)) {
      return Differ(absl::StrCat(what, " '", a[i]->name(), "': type ", a[i]->type().ToString(), " vs ",
                                 b[i]->type().ToString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompareGraphs(const Graph& expected, const Graph& actual) {
  QFUSE_RETURN_IF_ERROR(CompareValueLists("graph input", expected.inputs(), actual.inputs()));
  QFUSE_RETURN_IF_ERROR(CompareValueLists("graph output", expected.outputs(), actual.outputs()));
  std::vector<Value*> ca = expected.constants();
  std::vector<Value*> cb = actual.constants();
  if (ca.size() != cb.size()) return Differ(absl::StrCat("constant count ", ca.size(), " vs ", cb.size()));
  for (const Value* c : ca) {
    const Value* other = actual.FindValue(c->name());
    if (other == nullptr || !other->is_constant()) return Differ(absl::StrCat("constant '", c->name(), "' missing"));
    if (!c->initializer()->BitwiseEqual(*other->initializer())) {
      return Differ(absl::StrCat("constant '", c->name(), "' differs in type, shape or bits"));
    }
  }
  QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> na, expected.TopologicalOrder());
  QFUSE_ASSIGN_OR_RETURN(std::vector<Node*> nb, actual.TopologicalOrder());
  if (na.size() != nb.size()) return Differ(absl::StrCat("node count ", na.size(), " vs ", nb.size()));
  for (size_t i = 0; i < na.size(); ++i) {
    const Node* a = na[i];
    const Node* b = nb[i];
    const std::string where = absl::StrCat("node ", i, " ", a->Describe());
    if (a->name() != b->name() || a->op_type() != b->op_type() || a->domain() != b->domain()) {
      return Differ(absl::StrCat(where, " vs ", b->Describe()));
    }
    QFUSE_RETURN_IF_ERROR(CompareValueLists(absl::StrCat(where, " input").c_str(), a->inputs(), b->inputs()));
    QFUSE_RETURN_IF_ERROR(CompareValueLists(absl::StrCat(where, " output").c_str(), a->outputs(), b->outputs()));
    if (!(a->attrs() == b->attrs())) return Differ(absl::StrCat(where, ": attributes differ"));
  }
  return absl::OkStatus();
}

}  // namespace qfuse::ir
