#ifndef COPS_HTTP_JOBS_H_
#define COPS_HTTP_JOBS_H_

// Asynchronous work of the HTTP API (docs/api.md, "Jobs") and its Idempotency-Key replies.
//
// JobQueue runs submitted work on a bounded pool: `workers` jobs run at once and at most
// `max_queued` wait, at most `max_queued_per_owner` of them one owner's; a job moves queued ->
// running -> done (with its result) or failed (with its error), and is forgotten
// `keep_results` after it finished. Jobs belong to an owner (an opaque tag of the caller's
// credentials): another owner cannot see them. Owners take turns: a free worker runs the
// oldest waiting job of the next owner in turn, so one caller's hundred jobs do not delay
// another's one by a hundred jobs (each owner's own jobs run in the order submitted).
//
// IdempotentReplies remembers the reply of each request that carried an Idempotency-Key,
// per owner and route, for `keep`: a retry with the same key gets the same reply without
// the work being done again. The replies kept are bounded in bytes: beyond, the oldest are
// forgotten first (a retry of one of those does the work again).
//
// Both forget in the order things finished, so each request does constant work on average
// however many are kept.
//
// Thread-safety: both classes are safe for concurrent use.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace cops {

enum class JobState { kQueued, kRunning, kDone, kFailed };

// "queued", "running", "done", "failed": the names the API shows.
const char* JobStateName(JobState state);

struct JobQueueOptions {
  uint32_t workers = 2;       // jobs running at once
  uint32_t max_queued = 64;   // jobs waiting; a submission beyond is RESOURCE_EXHAUSTED
  uint32_t max_queued_per_owner = 16;       // of those, one owner's; beyond, RESOURCE_EXHAUSTED
  std::chrono::seconds keep_results{3600};  // a finished job is kept this long
  // The finished jobs' results and errors together are kept in at most this many bytes:
  // beyond, the oldest finished are forgotten first, as if expired.
  uint64_t max_result_bytes = uint64_t{256} << 20;
  // Clock of creation and expiry, microseconds since the Unix epoch (tests replace it).
  std::function<int64_t()> now_micros;
};

struct JobView {
  std::string id;
  JobState state = JobState::kQueued;
  std::string result;   // kDone: the result (JSON)
  absl::Status error;   // kFailed: why
  int64_t created_unix_micros = 0;
  int64_t finished_unix_micros = 0;  // 0 until done or failed
};

class JobQueue {
 public:
  // The work of a job: its result as JSON, or an error.
  using Work = std::function<absl::StatusOr<std::string>()>;

  explicit JobQueue(JobQueueOptions options);
  // Waits for running jobs; queued ones are dropped.
  ~JobQueue();
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // Called once when a job is done or failed, with its final view, on the worker thread
  // (no lock held).
  using Finished = std::function<void(const JobView&)>;

  // Queues `work` for `owner`; RESOURCE_EXHAUSTED when max_queued jobs already wait, or
  // max_queued_per_owner of the owner's; UNAVAILABLE after Shutdown(). `finished` may be
  // empty.
  absl::StatusOr<JobView> Submit(const std::string& owner, Work work, Finished finished = nullptr);
  // NOT_FOUND for an unknown or expired id, or a job of another owner.
  absl::StatusOr<JobView> Get(const std::string& owner, const std::string& id) const;
  // Refuses new jobs, drops queued ones and waits for the running ones.
  void Shutdown();

 private:
  struct Job {
    std::string owner;
    JobView view;
    Work work;
    Finished finished;
  };
  void RunWorker();
  // Forgets finished jobs past their retention, then the oldest beyond max_result_bytes.
  void ForgetFinishedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t Now() const;

  const JobQueueOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
  // The waiting jobs of each owner that has some, oldest first, and those owners in the
  // order of their turns (front: the next to run); `queued_` counts the jobs.
  std::map<std::string, std::deque<std::shared_ptr<Job>>> waiting_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> turns_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  // The finished jobs in the order they finished, and the bytes their results hold.
  std::deque<std::shared_ptr<Job>> finished_ ABSL_GUARDED_BY(mu_);
  uint64_t finished_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

// A reply as the HTTP layer sends it.
struct StoredReply {
  int status = 0;
  std::string content_type;
  std::string body;
  std::string location;  // Location header; "" = none
};

class IdempotentReplies {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{64} << 20;

  // `max_bytes`: the finished replies (bodies, keys and fingerprints) kept at most.
  explicit IdempotentReplies(std::chrono::seconds keep,
                             std::function<int64_t()> now_micros = nullptr,
                             uint64_t max_bytes = kDefaultMaxBytes);

  // What to do with a request carrying an Idempotency-Key.
  struct Decision {
    std::optional<StoredReply> replay;  // the first request's reply: send it again
    absl::Status refusal;  // ABORTED: the first is still running; INVALID_ARGUMENT: the key
                           // was used for a different request
  };
  // `scope` names the owner, route and key; `fingerprint` the request (e.g. a digest of its
  // query and body). When neither replay nor refusal is set, the caller does the work and
  // then calls Finish() or Abandon() with the same scope.
  Decision Begin(const std::string& scope, const std::string& fingerprint);
  void Finish(const std::string& scope, StoredReply reply);
  // The work failed in a way a retry may fix (unavailable, rate-limited): forget the key.
  void Abandon(const std::string& scope);

 private:
  struct Entry {
    std::string fingerprint;
    std::optional<StoredReply> reply;  // unset while the first request runs
    int64_t expires_unix_micros = 0;
    uint64_t finish = 0;  // which Finish() kept the reply (in finished_)
    uint64_t bytes = 0;
  };
  struct Finished {
    uint64_t finish;
    int64_t expires_unix_micros;
    std::string scope;
  };
  int64_t Now() const;
  // Forgets the oldest finished reply: stops (false) when there is none.
  bool ForgetOldestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::chrono::seconds keep_;
  const std::function<int64_t()> now_micros_;
  const uint64_t max_bytes_;
  absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::deque<Finished> finished_ ABSL_GUARDED_BY(mu_);  // in the order of Finish()
  uint64_t finished_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t finishes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cops

#endif  // COPS_HTTP_JOBS_H_
