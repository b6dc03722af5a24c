#ifndef COPS_CORE_STATUS_MACROS_H_
#define COPS_CORE_STATUS_MACROS_H_

// Small propagation macros: Debian's Abseil (20220623) ships none.

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define COPS_CONCAT_INNER_(a, b) a##b
#define COPS_CONCAT_(a, b) COPS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define COPS_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::absl::Status cops_status_ = (expr);           \
    if (!cops_status_.ok()) return cops_status_;    \
  } while (0)

// `lhs = value of expr` (an absl::StatusOr<T>), or returns its error status.
// `tmp` is an identifier and `lhs` may be a declaration: neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define COPS_ASSIGN_OR_RETURN(lhs, expr) \
  COPS_ASSIGN_OR_RETURN_IMPL_(COPS_CONCAT_(cops_statusor_, __LINE__), lhs, expr)
#define COPS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

#endif  // COPS_CORE_STATUS_MACROS_H_
