#ifndef COPS_ACCESS_AUDIT_SINK_H_
#define COPS_ACCESS_AUDIT_SINK_H_

// The audit trail of checks, off the check path: a handler hands the hits of a check to
// Record() after its reply is filled, which only appends to a bounded queue; one background
// thread drains the queue and writes batches (to the access store in copsd). Records that
// cannot be written, or that find the queue full, are counted and logged, never dropped
// silently. The destructor writes what is queued before it returns.
//
// A record therefore reaches the store a moment after the check's reply: QueryAudit may not
// show a check that finished microseconds ago (Flush() waits for it).
//
// The read side for owners (ListMatches) goes through Matches(), which asks the store by
// owner (PrincipalStore::QueryAuditOfOwner in copsd).
//
// Thread-safety: safe for concurrent use.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/wall_clock.h"
#include "storage/principal_store.h"

namespace cops {

struct AuditSinkOptions {
  // Records waiting to be written at most; beyond it Record() drops and counts. The bound
  // keeps memory fixed when the store stalls; larger rides out longer stalls.
  size_t max_queued_records = 65536;
  // Wall clock in microseconds since the epoch, stamped on each record when the check is
  // recorded (replaceable for tests).
  std::function<int64_t()> now_micros = WallClockMicros;
};

// Which records Matches() returns: those of documents owned by `owner`.
struct MatchQuery {
  std::string owner;
  uint64_t doc_id = 0;  // 0 = every document of the owner
  int64_t since_unix_micros = 0;
  size_t limit = 1000;  // clamped to [1, 10000] by the store
};

class AuditSink {
 public:
  // Writes one batch of records atomically (PrincipalStore::AppendAudit in copsd).
  using Writer = std::function<absl::Status(const std::vector<AuditRecord>&)>;
  // Reads the records of a MatchQuery, oldest first.
  using Reader = std::function<absl::StatusOr<std::vector<AuditRecord>>(const MatchQuery&)>;

  struct Counters {
    uint64_t written = 0;  // records the writer accepted
    uint64_t failed = 0;   // records lost because the writer failed
    uint64_t dropped = 0;  // records lost because the queue was full
  };

  // Starts the background writer. `write` is called from that thread only; `read` (may be
  // null: Matches() is then UNIMPLEMENTED) from the callers of Matches().
  explicit AuditSink(Writer write, AuditSinkOptions options = {});
  AuditSink(Writer write, Reader read, AuditSinkOptions options = {});
  // Writes everything queued, then stops the thread.
  ~AuditSink();
  AuditSink(const AuditSink&) = delete;
  AuditSink& operator=(const AuditSink&) = delete;

  // Queues `hits` (one record per registered document a check reported), each stamped now
  // and naming `checker`. Never blocks on the store and never fails the caller: what does not
  // fit the queue is counted and logged.
  void Record(std::string_view checker, std::vector<AuditRecord> hits);

  // Waits until every record queued before the call has been written or counted as failed.
  void Flush();

  // The written records `query` selects; UNIMPLEMENTED when the sink has no reader.
  absl::StatusOr<std::vector<AuditRecord>> Matches(const MatchQuery& query) const;

  Counters counters() const;

 private:
  void Run();
  bool Idle() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return queue_.empty() && !writing_; }
  bool HasWork() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !queue_.empty() || stopping_; }

  const Writer write_;
  const Reader read_;
  const AuditSinkOptions options_;

  mutable absl::Mutex mu_;
  std::vector<AuditRecord> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;  // a batch is with the writer
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Counters counters_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;  // last: starts once everything above is initialized
};

// A Writer appending to `store` (not owned; REQUIRES: outlives the sink).
AuditSink::Writer AppendTo(PrincipalStore* store);
// A Reader of `store`'s records by owner (not owned; REQUIRES: outlives the sink).
AuditSink::Reader MatchesFrom(const PrincipalStore* store);

}  // namespace cops

#endif  // COPS_ACCESS_AUDIT_SINK_H_
