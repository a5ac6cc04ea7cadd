//===- Status.h - Early returns on absl::Status -----------------*- C++ -*-===//
//
// The two forms every fallible call site takes, as absl's own
// RETURN_IF_ERROR / ASSIGN_OR_RETURN (not in its open-source release):
//
//   ZERO_RETURN_IF_ERROR(comm.barrier());
//   ZERO_ASSIGN_OR_RETURN(std::string dir, resolveCheckpoint(path));
//
// The status or value is returned as it is: a caller adds context where it
// has some, by hand.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_STATUS_H
#define ZERO_SUPPORT_STATUS_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <utility>

/// Returns the absl::Status `expr` evaluates to from the enclosing
/// function when it is not OK.
#define ZERO_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    if (::absl::Status zero_status_ = (expr); !zero_status_.ok())              \
      return zero_status_;                                                     \
  } while (false)

#define ZERO_STATUS_CONCAT_INNER_(a, b) a##b
#define ZERO_STATUS_CONCAT_(a, b) ZERO_STATUS_CONCAT_INNER_(a, b)

/// Evaluates `rexpr`, an absl::StatusOr<T>; returns its status from the
/// enclosing function when it is not OK, else moves its value into `lhs`
/// (a declaration, `T name`, or an lvalue).
#define ZERO_ASSIGN_OR_RETURN(lhs, rexpr)                                      \
  ZERO_ASSIGN_OR_RETURN_IMPL_(ZERO_STATUS_CONCAT_(zero_status_or_, __LINE__),  \
                              lhs, rexpr)

#define ZERO_ASSIGN_OR_RETURN_IMPL_(statusOr, lhs, rexpr)                      \
  auto statusOr = (rexpr);                                                     \
  if (!statusOr.ok())                                                          \
    return std::move(statusOr).status();                                       \
  lhs = std::move(statusOr).value()

#endif // ZERO_SUPPORT_STATUS_H
