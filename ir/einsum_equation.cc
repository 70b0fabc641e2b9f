#include "ir/einsum_equation.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace qfuse::ir {
namespace {

bool Contains(const std::vector<int>& labels, int l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); }

absl::StatusOr<std::vector<int>> ParseTerm(absl::string_view term, absl::string_view equation) {
  std::vector<int> labels;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char ch = term[i];
    if (ch == '.') {
      if (term.substr(i, 3) != "..." || seen_ellipsis) {
        return absl::InvalidArgumentError(absl::StrCat("bad ellipsis in Einsum equation '", equation, "'"));
      }
      seen_ellipsis = true;
      labels.push_back(kEinsumEllipsis);
      i += 2;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      labels.push_back(static_cast<unsigned char>(ch));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("bad character '", std::string(1, ch), "' in Einsum equation '",
                                                     equation, "'"));
    }
  }
  return labels;
}

}  // namespace

absl::StatusOr<EinsumEquation> ParseEinsumEquation(absl::string_view equation) {
  std::string eq;
  for (char ch : equation) {
    if (ch != ' ') eq.push_back(ch);
  }
  EinsumEquation e;
  absl::string_view lhs = eq;
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos) {
    lhs = lhs.substr(0, arrow);
    e.explicit_output = true;
    QFUSE_ASSIGN_OR_RETURN(e.output, ParseTerm(absl::string_view(eq).substr(arrow + 2), equation));
  }
  for (absl::string_view term : absl::StrSplit(lhs, ',')) {
    QFUSE_ASSIGN_OR_RETURN(std::vector<int> labels, ParseTerm(term, equation));
    e.inputs.push_back(std::move(labels));
  }
  if (e.explicit_output) {
    std::vector<int> seen;
    for (int l : e.output) {
      if (Contains(seen, l)) {
        return absl::InvalidArgumentError(absl::StrCat("output label repeated in Einsum equation '", equation, "'"));
      }
      seen.push_back(l);
      bool found = false;
      for (const auto& in : e.inputs) found = found || Contains(in, l);
      if (!found) {
        return absl::InvalidArgumentError(
            absl::StrCat("output label not in any input in Einsum equation '", equation, "'"));
      }
    }
    return e;
  }
  std::map<int, int> uses;  // ordered by character code
  bool ellipsis = false;
  for (const auto& in : e.inputs) {
    for (int l : in) {
      if (l == kEinsumEllipsis) {
        ellipsis = true;
      } else {
        ++uses[l];
      }
    }
  }
  if (ellipsis) e.output.push_back(kEinsumEllipsis);
  for (const auto& [l, n] : uses) {
    if (n == 1) e.output.push_back(l);
  }
  return e;
}

bool HasOnlyDistinctLetters(const EinsumEquation& equation) {
  auto distinct_letters = [](const std::vector<int>& term) {
    for (size_t i = 0; i < term.size(); ++i) {
      if (term[i] == kEinsumEllipsis || std::count(term.begin(), term.begin() + i, term[i]) > 0) return false;
    }
    return true;
  };
  if (!distinct_letters(equation.output)) return false;
  return std::all_of(equation.inputs.begin(), equation.inputs.end(), distinct_letters);
}

}  // namespace qfuse::ir
