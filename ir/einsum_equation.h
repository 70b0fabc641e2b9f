// The parsed form of an ONNX Einsum equation ("ij,jk->ik", "...ii->...i", "bij,bjk"): one
// label list per operand and the output's, shared by the Einsum kernel and the Einsum lowering.
#ifndef QFUSE_IR_EINSUM_EQUATION_H_
#define QFUSE_IR_EINSUM_EQUATION_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace qfuse::ir {

// A label is a letter's character code ('a'..'z', 'A'..'Z'); "..." is kEinsumEllipsis.
inline constexpr int kEinsumEllipsis = -1;

struct EinsumEquation {
  std::vector<std::vector<int>> inputs;  // one term per operand, in equation order
  // The explicit output term, or the implicit one: "..." first when any operand has it, then
  // every letter used exactly once over all operands (repeats within a term count), in
  // character-code order (so 'B' before 'a'), as numpy.einsum and ONNX define it.
  std::vector<int> output;
  bool explicit_output = false;  // the equation had "->"
};

// Parses `equation` (spaces ignored). A term holds letters and at most one "...". Errors
// (InvalidArgument, naming the equation): any other character, a second or broken "...", an
// explicit output label repeated or found in no operand.
absl::StatusOr<EinsumEquation> ParseEinsumEquation(absl::string_view equation);

// True when no term has "..." and no term repeats a label (no diagonals or traces): every
// operand dim then has its own letter.
bool HasOnlyDistinctLetters(const EinsumEquation& equation);

}  // namespace qfuse::ir

#endif  // QFUSE_IR_EINSUM_EQUATION_H_
