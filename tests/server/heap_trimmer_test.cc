#include "server/heap_trimmer.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace cops {
namespace {

// A trimmer that looks only when the test calls Tick(), over load the test sets.
class HeapTrimmerTest : public ::testing::Test {
 protected:
  HeapTrimmerOptions Options(absl::Duration period = absl::InfiniteDuration()) {
    HeapTrimmerOptions options;
    options.period = period;
    options.load = [this] { return load_; };
    options.trim = [this] { ++trims_; };
    return options;
  }
  void Set(uint32_t calls, uint32_t waiting, uint64_t admitted, uint64_t refused) {
    AdmissionLoad load;
    load.calls = calls;
    load.waiting = waiting;
    load.admitted = admitted;
    load.refused = refused;
    load_ = load;
  }

  // Set before the trimmer's own thread starts, or read by Tick() on the test's thread.
  AdmissionLoad load_;
  std::atomic<int> trims_{0};
};

TEST_F(HeapTrimmerTest, IdleServerIsNeverTrimmed) {
  HeapTrimmer trimmer(Options());
  EXPECT_FALSE(trimmer.Tick());
  EXPECT_FALSE(trimmer.Tick());
  EXPECT_EQ(trims_, 0);
}

TEST_F(HeapTrimmerTest, TrimsTwiceOnceAWholePeriodPassedWithoutCalls) {
  HeapTrimmer trimmer(Options());
  Set(/*calls=*/2, /*waiting=*/3, /*admitted=*/5, /*refused=*/40);
  EXPECT_FALSE(trimmer.Tick());  // calls at work: their memory is in use
  Set(0, 1, 7, 41);
  EXPECT_FALSE(trimmer.Tick());  // one still waiting
  Set(0, 0, 8, 41);
  EXPECT_FALSE(trimmer.Tick());  // none at work, but a call came since the last look
  EXPECT_TRUE(trimmer.Tick());   // a whole period without calls
  EXPECT_TRUE(trimmer.Tick());   // once more, for what was freed after the calls ended
  EXPECT_FALSE(trimmer.Tick());  // then nothing until new calls come
  EXPECT_EQ(trims_, 2);

  Set(0, 0, 8, 42);  // one refused call is enough, once it is over
  EXPECT_FALSE(trimmer.Tick());
  EXPECT_TRUE(trimmer.Tick());
  EXPECT_EQ(trims_, 3);
}

// Checks one at a time with gaps between them: no call at work at the instant of most looks,
// but calls in every period. Trimming then would stall them (malloc_trim holds the arenas).
TEST_F(HeapTrimmerTest, ASteadyStreamOfCallsIsNeverTrimmed) {
  HeapTrimmer trimmer(Options());
  for (uint64_t admitted = 1; admitted <= 20; ++admitted) {
    Set(/*calls=*/0, /*waiting=*/0, admitted * 300, 0);
    EXPECT_FALSE(trimmer.Tick()) << admitted;
  }
  EXPECT_EQ(trims_, 0);
  EXPECT_TRUE(trimmer.Tick());  // the stream stopped
}

TEST_F(HeapTrimmerTest, ItsThreadTrimsAfterABurst) {
  Set(0, 0, 1, 63);
  HeapTrimmer trimmer(Options(absl::Milliseconds(1)));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (trims_ < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  EXPECT_EQ(trims_, 2);
}

}  // namespace
}  // namespace cops
