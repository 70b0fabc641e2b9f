// Einsum equations: explicit and implicit outputs, "...", spaces, and every malformed form
// refused with the equation named.
#include "ir/einsum_equation.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

std::vector<int> Labels(const std::string& letters) { return std::vector<int>(letters.begin(), letters.end()); }

TEST(EinsumEquationTest, ExplicitOutput) {
  QFUSE_ASSERT_OK_AND_ASSIGN(EinsumEquation e, ParseEinsumEquation("ij, jk -> ik"));
  EXPECT_TRUE(e.explicit_output);
  EXPECT_EQ(e.inputs, (std::vector<std::vector<int>>{Labels("ij"), Labels("jk")}));
  EXPECT_EQ(e.output, Labels("ik"));
  EXPECT_TRUE(HasOnlyDistinctLetters(e));
}

TEST(EinsumEquationTest, ImplicitOutputIsLettersUsedOnceInCodeOrder) {
  QFUSE_ASSERT_OK_AND_ASSIGN(EinsumEquation e, ParseEinsumEquation("bij,bjA"));
  EXPECT_FALSE(e.explicit_output);
  EXPECT_EQ(e.output, Labels("Ai"));  // 'A' (65) before 'i' (105)
  QFUSE_ASSERT_OK_AND_ASSIGN(EinsumEquation trace, ParseEinsumEquation("ii"));
  EXPECT_TRUE(trace.output.empty());  // a repeat within one term counts
  EXPECT_FALSE(HasOnlyDistinctLetters(trace));
}

TEST(EinsumEquationTest, Ellipsis) {
  QFUSE_ASSERT_OK_AND_ASSIGN(EinsumEquation e, ParseEinsumEquation("...ij,...jk"));
  EXPECT_EQ(e.inputs[0], (std::vector<int>{kEinsumEllipsis, 'i', 'j'}));
  EXPECT_EQ(e.output, (std::vector<int>{kEinsumEllipsis, 'i', 'k'}));  // "..." first when implicit
  EXPECT_FALSE(HasOnlyDistinctLetters(e));
  QFUSE_ASSERT_OK_AND_ASSIGN(EinsumEquation x, ParseEinsumEquation("i...->...i"));
  EXPECT_EQ(x.output, (std::vector<int>{kEinsumEllipsis, 'i'}));
}

TEST(EinsumEquationTest, MalformedEquationsNameTheEquation) {
  for (const char* bad : {"i..j", "....i", "...i...", "ij,j1->i", "ij->ii", "ij->k", "i->...", "ij->i->j"}) {
    absl::StatusOr<EinsumEquation> e = ParseEinsumEquation(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(e.status().message().find(std::string("'") + bad + "'"), std::string::npos) << e.status();
  }
}

}  // namespace
}  // namespace qfuse::ir
