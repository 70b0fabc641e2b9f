// gtest helpers for absl::Status (Debian's Abseil ships no status matchers).
#ifndef QFUSE_TESTS_TESTING_STATUS_MATCHERS_H_
#define QFUSE_TESTS_TESTING_STATUS_MATCHERS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"

namespace qfuse::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace qfuse::testing

#define QFUSE_EXPECT_OK(expr)                                             \
  do {                                                                    \
    const ::absl::Status qfuse_s_ = ::qfuse::testing::GetStatus(expr);             \
    EXPECT_TRUE(qfuse_s_.ok()) << qfuse_s_.ToString();                    \
  } while (0)
#define QFUSE_ASSERT_OK(expr)                                             \
  do {                                                                    \
    const ::absl::Status qfuse_s_ = ::qfuse::testing::GetStatus(expr);             \
    ASSERT_TRUE(qfuse_s_.ok()) << qfuse_s_.ToString();                    \
  } while (0)

#define QFUSE_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                     \
  ASSERT_TRUE(tmp.ok()) << tmp.status().ToString();       \
  lhs = std::move(tmp).value()
#define QFUSE_ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  QFUSE_ASSERT_OK_AND_ASSIGN_IMPL_(QFUSE_STATUS_CONCAT_(qfuse_test_or_, __LINE__), lhs, rexpr)

#endif  // QFUSE_TESTS_TESTING_STATUS_MATCHERS_H_
