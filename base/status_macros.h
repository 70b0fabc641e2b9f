// Error-propagation macros for absl::Status / absl::StatusOr, defined once for all of qfuse.
#ifndef QFUSE_BASE_STATUS_MACROS_H_
#define QFUSE_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define QFUSE_STATUS_CONCAT_INNER_(a, b) a##b
#define QFUSE_STATUS_CONCAT_(a, b) QFUSE_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define QFUSE_RETURN_IF_ERROR(expr)                 \
  do {                                              \
    const ::absl::Status qfuse_status_ = (expr);    \
    if (!qfuse_status_.ok()) return qfuse_status_;  \
  } while (0)

// `lhs = value of rexpr` for an absl::StatusOr<T> rexpr, or returns its error.
#define QFUSE_ASSIGN_OR_RETURN(lhs, rexpr) \
  QFUSE_ASSIGN_OR_RETURN_IMPL_(QFUSE_STATUS_CONCAT_(qfuse_statusor_, __LINE__), lhs, rexpr)

#define QFUSE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) return statusor.status();            \
  lhs = std::move(statusor).value()

#endif  // QFUSE_BASE_STATUS_MACROS_H_
