#include "engine/cancellation_probe.h"

#include <chrono>

#include "gtest/gtest.h"

namespace cops {
namespace {

using Clock = CancellationProbe::Clock;
using std::chrono::hours;

TEST(CancellationProbeTest, APassedDeadlineCancelsWithoutAskingTheTransport) {
  int polls = 0;
  CancellationProbe probe(Clock::now() - hours(1), [&] { ++polls; return false; }, hours(1));
  EXPECT_TRUE(probe.Cancelled());
  EXPECT_EQ(polls, 0);
}

TEST(CancellationProbeTest, ShortWorkIsNotPolledForTheClientsCancellation) {
  int polls = 0;
  CancellationProbe probe(Clock::time_point::max(), [&] { ++polls; return true; }, hours(1));
  EXPECT_FALSE(probe.Cancelled());
  probe.Restart();
  EXPECT_FALSE(probe.Cancelled());
  EXPECT_EQ(polls, 0);
}

TEST(CancellationProbeTest, WorkPastThePollIntervalAsksTheTransport) {
  bool cancelled = false;
  int polls = 0;
  CancellationProbe probe(Clock::now() + hours(1), [&] { ++polls; return cancelled; },
                          std::chrono::nanoseconds(0));
  EXPECT_FALSE(probe.Cancelled());
  cancelled = true;
  EXPECT_TRUE(probe.Cancelled());
  EXPECT_EQ(polls, 2);
}

}  // namespace
}  // namespace cops
