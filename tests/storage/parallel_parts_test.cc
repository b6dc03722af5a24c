#include "storage/parallel_parts.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace cops {
namespace {

TEST(ParallelPartsTest, RunsEachPartExactlyOnce) {
  for (int workers : {0, 1, 3}) {
    ParallelParts runner(workers);
    EXPECT_EQ(runner.workers(), workers);
    for (size_t n : {0u, 1u, 2u, 7u, 64u}) {
      std::vector<std::atomic<int>> calls(n);
      runner.Run(n, [&](size_t i) { calls[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(calls[i].load(), 1) << "workers " << workers << " n " << n << " part " << i;
    }
  }
}

TEST(ParallelPartsTest, AnIdleWorkerTakesAPartWhileTheCallerRunsAnother) {
  ParallelParts runner(1);
  std::atomic<int> inside{0}, most_inside{0};
  absl::Notification both;
  runner.Run(2, [&](size_t) {
    const int now = inside.fetch_add(1) + 1;
    int seen = most_inside.load();
    while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {
    }
    if (now == 2) both.Notify();
    // Each part waits (bounded) for the other to start: only a worker running beside the
    // caller lets both be inside at once.
    both.WaitForNotificationWithTimeout(absl::Seconds(10));
    inside.fetch_sub(1);
  });
  EXPECT_EQ(most_inside.load(), 2);
}

TEST(ParallelPartsTest, CallerFinishesAloneWhenEveryWorkerIsBusy) {
  ParallelParts runner(1);
  absl::Notification release, worker_busy;
  // Occupy the only worker: of the first call's two parts, the one on the worker blocks
  // until released; the caller's waits until the worker holds the other.
  std::thread first([&] {
    const std::thread::id caller = std::this_thread::get_id();
    runner.Run(2, [&](size_t) {
      if (std::this_thread::get_id() == caller) {
        worker_busy.WaitForNotification();
        return;
      }
      // The worker may run both parts when the caller is slow to claim one.
      if (!worker_busy.HasBeenNotified()) worker_busy.Notify();
      release.WaitForNotification();
    });
  });
  worker_busy.WaitForNotification();
  // Every part of this call must run on this thread; it must not wait for the worker.
  std::vector<std::thread::id> ran_on;
  absl::Mutex mu;
  runner.Run(5, [&](size_t) {
    absl::MutexLock lock(&mu);
    ran_on.push_back(std::this_thread::get_id());
  });
  ASSERT_EQ(ran_on.size(), 5u);
  for (const auto& id : ran_on) EXPECT_EQ(id, std::this_thread::get_id());
  release.Notify();
  first.join();
}

TEST(ParallelPartsTest, ManyCallersAtOnce) {
  ParallelParts runner(2);
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        runner.Run(3, [&](size_t i) { total.fetch_add(static_cast<long>(i) + 1); });
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 4L * 200 * (1 + 2 + 3));
}

}  // namespace
}  // namespace cops
