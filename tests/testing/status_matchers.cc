#include "tests/testing/status_matchers.h"

namespace cops::testing::internal {

::testing::AssertionResult IsOk(const char* expr, const absl::Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr << " is not OK: " << status;
}

}  // namespace cops::testing::internal
