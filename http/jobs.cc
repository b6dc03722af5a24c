#include "http/jobs.h"

#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <utility>

namespace cops {
namespace {

int64_t SystemMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// 128 random bits as hex: a job id nobody can guess.
std::string NewJobId() {
  unsigned char bytes[16] = {};
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    // Without entropy, ids would still be unique through the counter, only guessable.
    static std::atomic<uint64_t> counter{0};
    const uint64_t n = counter.fetch_add(1) ^ static_cast<uint64_t>(SystemMicros());
    for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(n >> (8 * i));
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string id = "job_";
  for (unsigned char b : bytes) {
    id += kDigits[b >> 4];
    id += kDigits[b & 15];
  }
  return id;
}

// What keeping one more finished job or reply costs beyond its strings' bytes: map and
// queue nodes, string and status headers (an estimate, so that many small entries count too).
constexpr uint64_t kEntryOverheadBytes = 256;

// What a finished job's view holds.
uint64_t ResultBytes(const JobView& view) {
  return kEntryOverheadBytes + view.id.size() + view.result.size() + view.error.message().size();
}

}  // namespace

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kFailed:
      return "failed";
  }
  return "unknown";
}

JobQueue::JobQueue(JobQueueOptions options) : options_(std::move(options)) {
  for (uint32_t i = 0; i < std::max<uint32_t>(options_.workers, 1); ++i) {
    workers_.emplace_back([this] { RunWorker(); });
  }
}

JobQueue::~JobQueue() { Shutdown(); }

int64_t JobQueue::Now() const {
  return options_.now_micros ? options_.now_micros() : SystemMicros();
}

void JobQueue::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [owner, jobs] : waiting_) {
      for (const std::shared_ptr<Job>& job : jobs) {
        job->view.state = JobState::kFailed;
        job->view.error = absl::UnavailableError("the server stopped before the job ran");
        job->view.finished_unix_micros = Now();
      }
    }
    waiting_.clear();
    turns_.clear();
    queued_ = 0;
  }
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

void JobQueue::ForgetFinishedLocked() {
  const int64_t horizon =
      Now() - std::chrono::duration_cast<std::chrono::microseconds>(options_.keep_results).count();
  while (!finished_.empty() && (finished_.front()->view.finished_unix_micros <= horizon ||
                                finished_bytes_ > options_.max_result_bytes)) {
    const JobView& v = finished_.front()->view;
    finished_bytes_ -= ResultBytes(v);
    jobs_.erase(v.id);
    finished_.pop_front();
  }
}

absl::StatusOr<JobView> JobQueue::Submit(const std::string& owner, Work work,
                                         Finished finished) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is stopping: no new jobs");
  ForgetFinishedLocked();
  if (queued_ >= options_.max_queued) {
    return absl::ResourceExhaustedError("the job queue is full (" +
                                        std::to_string(options_.max_queued) +
                                        " jobs waiting): try again later");
  }
  if (auto it = waiting_.find(owner);
      it != waiting_.end() && it->second.size() >= options_.max_queued_per_owner) {
    return absl::ResourceExhaustedError(
        "you have " + std::to_string(it->second.size()) +
        " jobs waiting, the most one caller may: submit more as they start");
  }
  auto [mine, first] = waiting_.try_emplace(owner);
  auto job = std::make_shared<Job>();
  job->owner = owner;
  job->view.id = NewJobId();
  job->view.created_unix_micros = Now();
  job->work = std::move(work);
  job->finished = std::move(finished);
  jobs_[job->view.id] = job;
  mine->second.push_back(job);
  if (first) turns_.push_back(owner);
  ++queued_;
  return job->view;
}

absl::StatusOr<JobView> JobQueue::Get(const std::string& owner, const std::string& id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  const int64_t horizon =
      Now() - std::chrono::duration_cast<std::chrono::microseconds>(options_.keep_results).count();
  if (it == jobs_.end() || it->second->owner != owner ||
      (it->second->view.finished_unix_micros != 0 &&
       it->second->view.finished_unix_micros <= horizon)) {
    return absl::NotFoundError("job " + id + " not found (unknown, expired, or not yours)");
  }
  return it->second->view;
}

void JobQueue::RunWorker() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](JobQueue* q)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) { return q->stopping_ || q->queued_ > 0; },
          this));
      if (queued_ == 0) return;
      // The next owner in turn runs its oldest job, then goes to the back of the line if
      // more of its jobs wait.
      auto mine = waiting_.find(turns_.front());
      turns_.pop_front();
      job = std::move(mine->second.front());
      mine->second.pop_front();
      if (mine->second.empty()) {
        waiting_.erase(mine);
      } else {
        turns_.push_back(mine->first);
      }
      --queued_;
      job->view.state = JobState::kRunning;
    }
    absl::StatusOr<std::string> result = job->work();
    JobView view;
    Finished finished;
    {
      absl::MutexLock lock(&mu_);
      job->work = nullptr;  // releases the document it held
      if (result.ok()) {
        job->view.state = JobState::kDone;
        job->view.result = *std::move(result);
      } else {
        job->view.state = JobState::kFailed;
        job->view.error = result.status();
      }
      job->view.finished_unix_micros = Now();
      view = job->view;
      finished = std::move(job->finished);
      finished_bytes_ += ResultBytes(job->view);
      finished_.push_back(std::move(job));
      ForgetFinishedLocked();
    }
    if (finished) finished(view);
  }
}

IdempotentReplies::IdempotentReplies(std::chrono::seconds keep, std::function<int64_t()> now_micros,
                                     uint64_t max_bytes)
    : keep_(keep), now_micros_(std::move(now_micros)), max_bytes_(max_bytes) {}

int64_t IdempotentReplies::Now() const { return now_micros_ ? now_micros_() : SystemMicros(); }

bool IdempotentReplies::ForgetOldestLocked() {
  if (finished_.empty()) return false;
  const Finished& oldest = finished_.front();
  auto it = entries_.find(oldest.scope);
  if (it != entries_.end() && it->second.reply.has_value() && it->second.finish == oldest.finish) {
    finished_bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
  finished_.pop_front();
  return true;
}

IdempotentReplies::Decision IdempotentReplies::Begin(const std::string& scope,
                                                     const std::string& fingerprint) {
  absl::MutexLock lock(&mu_);
  const int64_t now = Now();
  while (!finished_.empty() && finished_.front().expires_unix_micros <= now) {
    ForgetOldestLocked();
  }
  Decision decision;
  auto [it, inserted] = entries_.try_emplace(scope);
  if (inserted) {
    it->second.fingerprint = fingerprint;
    return decision;  // the caller does the work
  }
  if (it->second.fingerprint != fingerprint) {
    decision.refusal = absl::InvalidArgumentError(
        "this Idempotency-Key was used for a different request: use a new key for new work");
  } else if (!it->second.reply.has_value()) {
    decision.refusal = absl::AbortedError(
        "a request with this Idempotency-Key is still in progress: retry later");
  } else {
    decision.replay = it->second.reply;
  }
  return decision;
}

void IdempotentReplies::Finish(const std::string& scope, StoredReply reply) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(scope);
  if (it == entries_.end() || it->second.reply.has_value()) return;
  Entry& e = it->second;
  e.bytes = kEntryOverheadBytes + 2 * scope.size() + e.fingerprint.size() +
            reply.content_type.size() + reply.body.size() + reply.location.size();
  e.reply = std::move(reply);
  e.expires_unix_micros =
      Now() + std::chrono::duration_cast<std::chrono::microseconds>(keep_).count();
  e.finish = ++finishes_;
  finished_.push_back(Finished{e.finish, e.expires_unix_micros, scope});
  finished_bytes_ += e.bytes;
  while (finished_bytes_ > max_bytes_ && ForgetOldestLocked()) {
  }
}

void IdempotentReplies::Abandon(const std::string& scope) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(scope);
  // A finished reply stays until it expires or is pushed out (its bytes are counted).
  if (it != entries_.end() && !it->second.reply.has_value()) entries_.erase(it);
}

}  // namespace cops
