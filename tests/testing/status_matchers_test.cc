#include "tests/testing/status_matchers.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace cops::testing {
namespace {

absl::Status Fail() { return absl::NotFoundError("no document 41"); }
absl::StatusOr<int> FailOr() { return absl::DataLossError("block 7: bad checksum"); }
absl::StatusOr<std::unique_ptr<int>> Seven() { return std::make_unique<int>(7); }

TEST(StatusMatchersTest, OkPasses) {
  EXPECT_OK(absl::OkStatus());
  ASSERT_OK(absl::StatusOr<int>(3));
}

TEST(StatusMatchersTest, FailurePrintsExpressionCodeAndMessage) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Fail()), "Fail() is not OK: NOT_FOUND: no document 41");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(FailOr()) << "context",
                          "FailOr() is not OK: DATA_LOSS: block 7: bad checksum");
  EXPECT_FATAL_FAILURE(ASSERT_OK(Fail()), "NOT_FOUND: no document 41");
}

TEST(StatusMatchersTest, AssignOrFail) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<int> seven, Seven());
  EXPECT_EQ(*seven, 7);
  int value = 0;
  ASSERT_OK_AND_ASSIGN(value, absl::StatusOr<int>(5));
  EXPECT_EQ(value, 5);
  EXPECT_FATAL_FAILURE(
      {
        ASSERT_OK_AND_ASSIGN(int unused, FailOr());
        (void)unused;
      },
      "FailOr() is not OK: DATA_LOSS");
}

}  // namespace
}  // namespace cops::testing
