#include "access/admission_control.h"

#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;

AdmissionLimits Limits(uint32_t max_calls, uint64_t max_bytes, uint32_t max_waiting,
                       absl::Duration max_wait = absl::Seconds(60)) {
  AdmissionLimits limits;
  limits.max_calls = max_calls;
  limits.max_bytes = max_bytes;
  limits.max_waiting = max_waiting;
  limits.max_wait = max_wait;
  return limits;
}

absl::Time Later() { return absl::Now() + absl::Seconds(60); }

// Polls until `done` holds, for at most 10 s.
template <typename Predicate>
bool Eventually(Predicate done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(AdmissionControlTest, CallsBeyondTheLimitAreRefusedAtOnceWhenNoneMayWait) {
  AdmissionControl admission(Limits(/*max_calls=*/2, 64 * kMiB, /*max_waiting=*/0));
  ASSERT_OK_AND_ASSIGN(AdmissionControl::Permit first, admission.Admit(100, Later()));
  ASSERT_OK_AND_ASSIGN(AdmissionControl::Permit second, admission.Admit(100, Later()));

  absl::StatusOr<AdmissionControl::Permit> third = admission.Admit(100, Later());
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(),
              HasSubstr("server busy: checks and registrations at work 2 (limit 2)"));
  EXPECT_THAT(third.status().message(), HasSubstr("retry later"));
  AdmissionLoad load = admission.load();
  EXPECT_EQ(load.calls, 2u);
  EXPECT_EQ(load.bytes, 200u);
  EXPECT_EQ(load.admitted, 2u);
  EXPECT_EQ(load.refused, 1u);

  first = AdmissionControl::Permit();  // the first call ends
  EXPECT_OK(admission.Admit(100, Later()));
  load = admission.load();
  EXPECT_EQ(load.calls, 1u);  // the permit just admitted was dropped at once
  EXPECT_EQ(load.admitted, 3u);
}

TEST(AdmissionControlTest, DocumentBytesAtWorkAreBounded) {
  AdmissionControl admission(Limits(/*max_calls=*/8, 10 * kMiB, /*max_waiting=*/0));
  ASSERT_OK_AND_ASSIGN(AdmissionControl::Permit six, admission.Admit(6 * kMiB, Later()));

  absl::StatusOr<AdmissionControl::Permit> five = admission.Admit(5 * kMiB, Later());
  EXPECT_EQ(five.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(five.status().message(),
              HasSubstr("a document of 5.0 MiB does not fit beside the 6.0 MiB at work "
                        "(limit 10.0 MiB)"));
  EXPECT_OK(admission.Admit(4 * kMiB, Later()));  // fits exactly
}

TEST(AdmissionControlTest, DocumentLargerThanTheBudgetIsLetInAlone) {
  AdmissionControl admission(Limits(/*max_calls=*/8, 1 * kMiB, /*max_waiting=*/0));
  ASSERT_OK_AND_ASSIGN(AdmissionControl::Permit large, admission.Admit(5 * kMiB, Later()));
  EXPECT_EQ(admission.Admit(1, Later()).status().code(), absl::StatusCode::kResourceExhausted);
  large = AdmissionControl::Permit();
  EXPECT_OK(admission.Admit(1, Later()));
}

TEST(AdmissionControlTest, WaitingCallStartsWhenRoomFrees) {
  AdmissionControl admission(Limits(/*max_calls=*/1, 64 * kMiB, /*max_waiting=*/1));
  std::optional<AdmissionControl::Permit> running;
  ASSERT_OK_AND_ASSIGN(running.emplace(), admission.Admit(100, Later()));

  absl::Status waiter_status = absl::UnknownError("not run");
  std::thread waiter([&] { waiter_status = admission.Admit(200, Later()).status(); });
  ASSERT_TRUE(Eventually([&] { return admission.load().waiting == 1; }));
  // The one waiting place is taken: a third call is refused at once.
  absl::StatusOr<AdmissionControl::Permit> third = admission.Admit(100, Later());
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr(", waiting 1 (limit 1)"));

  running.reset();
  waiter.join();
  EXPECT_OK(waiter_status);
  const AdmissionLoad load = admission.load();
  EXPECT_EQ(load.waiting, 0u);
  EXPECT_EQ(load.calls, 0u);
  EXPECT_EQ(load.admitted, 2u);
  EXPECT_EQ(load.refused, 1u);
}

TEST(AdmissionControlTest, WaitEndsAtTheCallsDeadline) {
  AdmissionControl admission(Limits(/*max_calls=*/1, 64 * kMiB, /*max_waiting=*/4));
  ASSERT_OK_AND_ASSIGN(AdmissionControl::Permit running, admission.Admit(100, Later()));
  // The deadline has passed: the call gives up without waiting out max_wait (60 s).
  absl::StatusOr<AdmissionControl::Permit> late = admission.Admit(100, absl::Now());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(late.status().message(), HasSubstr("after waiting"));
  EXPECT_EQ(admission.load().waiting, 0u);
}

TEST(AdmissionControlTest, WaitIsBoundedByMaxWait) {
  AdmissionControl admission(
      Limits(/*max_calls=*/1, 64 * kMiB, /*max_waiting=*/4, absl::Milliseconds(1)));
  ASSERT_OK_AND_ASSIGN(AdmissionControl::Permit running, admission.Admit(100, Later()));
  absl::StatusOr<AdmissionControl::Permit> refused = admission.Admit(100, Later());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("checks and registrations at work 1 (limit 1) after waiting"));
}

}  // namespace
}  // namespace cops
