#ifndef COPS_TESTS_TESTING_STATUS_MATCHERS_H_
#define COPS_TESTS_TESTING_STATUS_MATCHERS_H_

// GoogleTest assertions on absl::Status and absl::StatusOr<T> that print the status on
// failure (`ASSERT_TRUE(s.ok())` prints only "false"):
//
//   ASSERT_OK(index->Put(doc));                     // fatal
//   EXPECT_OK(Parse(text)) << "while parsing " << name;
//   ASSERT_OK_AND_ASSIGN(std::unique_ptr<Index> index, Index::Open(options));
//
// tests/testing/test_server.h adds grpc::Status to the types ASSERT_OK/EXPECT_OK accept.

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace cops::testing::internal {

// Predicate formatters for ASSERT_PRED_FORMAT1: success if `value` is OK, otherwise a
// failure naming the expression and its status ("`expr` is not OK: NOT_FOUND: ...").
::testing::AssertionResult IsOk(const char* expr, const absl::Status& status);

template <typename T>
::testing::AssertionResult IsOk(const char* expr, const absl::StatusOr<T>& status_or) {
  return IsOk(expr, status_or.status());
}

}  // namespace cops::testing::internal

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::cops::testing::internal::IsOk, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::cops::testing::internal::IsOk, expr)

// `lhs = *rexpr` for an absl::StatusOr<T> `rexpr`, or a fatal failure printing its status.
// `lhs` may declare a variable (`auto x`, `std::unique_ptr<Index> index`); like ASSERT_*,
// usable only in functions returning void. A type with a top-level comma needs parentheses
// around `lhs` or an alias.
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr)                                                   \
  COPS_TESTING_ASSERT_OK_AND_ASSIGN_IMPL_(                                                 \
      COPS_TESTING_CONCAT_(cops_testing_statusor_, __LINE__), lhs, rexpr)

#define COPS_TESTING_CONCAT_INNER_(a, b) a##b
#define COPS_TESTING_CONCAT_(a, b) COPS_TESTING_CONCAT_INNER_(a, b)
#define COPS_TESTING_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr)             \
  auto statusor = (rexpr);                                                        \
  GTEST_ASSERT_(::cops::testing::internal::IsOk(#rexpr, statusor), GTEST_FATAL_FAILURE_); \
  lhs = *std::move(statusor)

#endif  // COPS_TESTS_TESTING_STATUS_MATCHERS_H_
