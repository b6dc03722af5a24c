// The HTTP API's job queue and Idempotency-Key store: states in order, a bounded queue,
// results kept for their time and then gone, jobs private to their owner, and a retried
// request answered with the first reply.

#include "http/jobs.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

JobView WaitFinished(const JobQueue& jobs, const std::string& owner, const std::string& id) {
  for (;;) {
    absl::StatusOr<JobView> v = jobs.Get(owner, id);
    if (!v.ok()) return JobView{};
    if (v->state == JobState::kDone || v->state == JobState::kFailed) return *v;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Submits a job for `owner` that holds the queue's single worker until `release`, and waits
// until it runs: jobs submitted after it wait.
absl::Status OccupyTheWorker(JobQueue& jobs, const std::string& owner,
                             absl::Notification& release) {
  std::atomic<bool> started{false};
  absl::StatusOr<JobView> job = jobs.Submit(owner, [&]() -> absl::StatusOr<std::string> {
    started = true;
    release.WaitForNotification();
    return std::string("{}");
  });
  if (!job.ok()) return job.status();
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return absl::OkStatus();
}

TEST(JobQueueTest, RunsJobsThroughTheirStates) {
  JobQueueOptions options;
  options.workers = 1;
  JobQueue jobs(options);
  absl::Notification release;
  ASSERT_OK_AND_ASSIGN(JobView first, jobs.Submit("alice", [&]() -> absl::StatusOr<std::string> {
                         release.WaitForNotification();
                         return std::string(R"({"ok":true})");
                       }));
  EXPECT_EQ(first.state, JobState::kQueued);
  ASSERT_OK_AND_ASSIGN(JobView failing, jobs.Submit("alice", []() -> absl::StatusOr<std::string> {
                         return absl::NotFoundError("collection 'x' not found");
                       }));
  // The single worker holds the first job: it runs, the second waits.
  for (;;) {
    ASSERT_OK_AND_ASSIGN(JobView v, jobs.Get("alice", first.id));
    if (v.state == JobState::kRunning) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_OK_AND_ASSIGN(JobView waiting, jobs.Get("alice", failing.id));
  EXPECT_EQ(waiting.state, JobState::kQueued);
  release.Notify();

  const JobView done = WaitFinished(jobs, "alice", first.id);
  EXPECT_EQ(done.state, JobState::kDone);
  EXPECT_EQ(done.result, R"({"ok":true})");
  EXPECT_NE(done.finished_unix_micros, 0);
  const JobView failed = WaitFinished(jobs, "alice", failing.id);
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_EQ(failed.error.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(failed.error.message(), "collection 'x' not found");
  EXPECT_STREQ(JobStateName(failed.state), "failed");
}

TEST(JobQueueTest, OtherOwnersAndUnknownIdsAreNotFound) {
  JobQueue jobs(JobQueueOptions{});
  ASSERT_OK_AND_ASSIGN(JobView job, jobs.Submit("alice", [] {
                         return absl::StatusOr<std::string>("{}");
                       }));
  EXPECT_EQ(jobs.Get("mallory", job.id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(jobs.Get("alice", "job_0123").status().code(), absl::StatusCode::kNotFound);
  EXPECT_OK(jobs.Get("alice", job.id));
}

// One caller cannot take the whole queue: past its share it is refused, and others still
// get in (before, "a" filled all 4 places and "b" was refused); a full queue refuses anyone.
TEST(JobQueueTest, OneOwnerMayFillOnlyItsShareOfTheQueue) {
  JobQueueOptions options;
  options.workers = 1;
  options.max_queued = 4;
  options.max_queued_per_owner = 2;
  JobQueue jobs(options);
  absl::Notification release;
  ASSERT_OK(OccupyTheWorker(jobs, "a", release));
  auto quick = []() -> absl::StatusOr<std::string> { return std::string("{}"); };
  ASSERT_OK(jobs.Submit("a", quick));
  ASSERT_OK(jobs.Submit("a", quick));
  absl::StatusOr<JobView> refused = jobs.Submit("a", quick);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "you have 2 jobs waiting, the most one caller may: submit more as they start");
  ASSERT_OK(jobs.Submit("b", quick));
  ASSERT_OK(jobs.Submit("b", quick));
  // The queue itself is full now, for everyone.
  absl::StatusOr<JobView> full = jobs.Submit("c", quick);
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(full.status().message(), "the job queue is full (4 jobs waiting): try again later");
  release.Notify();
}

// Owners take turns: a job submitted behind another caller's many waits for one of them, not
// for all (before, the queue ran in submission order and "b" ran last).
TEST(JobQueueTest, OwnersTakeTurns) {
  JobQueueOptions options;
  options.workers = 1;
  JobQueue jobs(options);
  absl::Notification release;
  ASSERT_OK(OccupyTheWorker(jobs, "a", release));
  absl::Mutex mu;
  std::vector<std::string> order;
  auto job = [&](std::string name) {
    return [&, name]() -> absl::StatusOr<std::string> {
      absl::MutexLock lock(&mu);
      order.push_back(name);
      return std::string("{}");
    };
  };
  std::vector<std::pair<std::string, std::string>> submitted;  // owner, id
  for (const char* name : {"a1", "a2", "a3", "b1", "a4", "c1", "b2"}) {
    const std::string owner(1, name[0]);
    ASSERT_OK_AND_ASSIGN(JobView v, jobs.Submit(owner, job(name)));
    submitted.emplace_back(owner, v.id);
  }
  release.Notify();
  for (const auto& [owner, id] : submitted) {
    EXPECT_EQ(WaitFinished(jobs, owner, id).state, JobState::kDone);
  }
  // "a" was first in line (a1); then "b" and "c" each run one before "a" runs its next.
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "b1", "c1", "a2", "b2", "a3", "a4"}));
}

TEST(JobQueueTest, FinishedJobsAreForgottenAfterTheirRetention) {
  std::atomic<int64_t> now{1'000'000'000};
  JobQueueOptions options;
  options.keep_results = std::chrono::seconds(60);
  options.now_micros = [&now] { return now.load(); };
  JobQueue jobs(options);
  ASSERT_OK_AND_ASSIGN(JobView job, jobs.Submit("a", [] {
                         return absl::StatusOr<std::string>("{}");
                       }));
  EXPECT_EQ(WaitFinished(jobs, "a", job.id).state, JobState::kDone);
  now += 59'000'000;
  EXPECT_OK(jobs.Get("a", job.id));
  now += 2'000'000;
  EXPECT_EQ(jobs.Get("a", job.id).status().code(), absl::StatusCode::kNotFound);
}

TEST(JobQueueTest, FinishedResultsAreKeptWithinTheirBytesOldestForgottenFirst) {
  // Before the budget, every result stayed for its hour: a caller submitting small jobs with
  // large results (batch comparisons) could fill copsd's memory.
  JobQueueOptions options;
  options.workers = 1;
  options.max_result_bytes = 1 << 20;
  options.max_queued_per_owner = 20;
  JobQueue jobs(options);
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK_AND_ASSIGN(JobView job, jobs.Submit("a", [i] {
      return absl::StatusOr<std::string>(std::string(100 << 10, 'a' + i));
    }));
    ids.push_back(job.id);
  }
  // One worker: the jobs finish in order, the last one last.
  EXPECT_EQ(WaitFinished(jobs, "a", ids.back()).result, std::string(100 << 10, 'a' + 19));
  int kept = 0;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<JobView> job = jobs.Get("a", ids[i]);
    if (job.ok()) {
      ++kept;
      EXPECT_EQ(job->result.size(), size_t{100 << 10});
    } else {
      EXPECT_EQ(job.status().code(), absl::StatusCode::kNotFound);
      EXPECT_EQ(kept, 0) << "job " << i << " forgotten after a younger one was kept";
    }
  }
  EXPECT_EQ(kept, 10);  // 10 x 100 KiB (and their ids) fit in 1 MiB, 11 do not
}

TEST(IdempotentRepliesTest, ARetryGetsTheFirstReply) {
  IdempotentReplies replies(std::chrono::seconds(60));
  IdempotentReplies::Decision first = replies.Begin("alice\n/v1/documents\nk1", "body-a");
  EXPECT_FALSE(first.replay.has_value());
  EXPECT_OK(first.refusal);
  // While the first runs, a retry is told to wait.
  EXPECT_EQ(replies.Begin("alice\n/v1/documents\nk1", "body-a").refusal.code(),
            absl::StatusCode::kAborted);
  replies.Finish("alice\n/v1/documents\nk1", StoredReply{201, "application/json", "{\"doc_id\":7}", ""});
  IdempotentReplies::Decision retry = replies.Begin("alice\n/v1/documents\nk1", "body-a");
  ASSERT_TRUE(retry.replay.has_value());
  EXPECT_EQ(retry.replay->status, 201);
  EXPECT_EQ(retry.replay->body, "{\"doc_id\":7}");
  // The same key for another request is an error, not a replay.
  EXPECT_EQ(replies.Begin("alice\n/v1/documents\nk1", "body-b").refusal.code(),
            absl::StatusCode::kInvalidArgument);
  // Another owner's key is another entry.
  EXPECT_FALSE(replies.Begin("bob\n/v1/documents\nk1", "body-a").replay.has_value());
}

TEST(IdempotentRepliesTest, RepliesAreKeptWithinTheirBytesOldestForgottenFirst) {
  // Before the budget, every reply stayed for its 24 hours: a caller sending requests with
  // new keys could fill copsd's memory.
  IdempotentReplies replies(std::chrono::seconds(86400), nullptr, /*max_bytes=*/1 << 20);
  auto scope = [](int i) { return "alice\n/v1/checks\nk" + std::to_string(i); };
  for (int i = 0; i < 20; ++i) {
    ASSERT_FALSE(replies.Begin(scope(i), "body").replay.has_value());
    replies.Finish(scope(i), StoredReply{200, "application/json", std::string(100 << 10, 'x'), ""});
  }
  // The newest are replayed, the oldest run again (a new Begin: neither replay nor refusal).
  for (int i = 19; i >= 0; --i) {
    IdempotentReplies::Decision d = replies.Begin(scope(i), "body");
    EXPECT_OK(d.refusal) << i;
    EXPECT_EQ(d.replay.has_value(), i >= 10) << i;
  }
}

TEST(IdempotentRepliesTest, AbandonedAndExpiredKeysRunAgain) {
  std::atomic<int64_t> now{1'000'000};
  IdempotentReplies replies(std::chrono::seconds(10), [&now] { return now.load(); });
  replies.Begin("s", "f");
  replies.Abandon("s");
  EXPECT_FALSE(replies.Begin("s", "f").replay.has_value());
  replies.Finish("s", StoredReply{200, "application/json", "{}", ""});
  EXPECT_TRUE(replies.Begin("s", "f").replay.has_value());
  now += 11'000'000;
  EXPECT_FALSE(replies.Begin("s", "f").replay.has_value());
}

}  // namespace
}  // namespace cops
