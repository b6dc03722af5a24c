#ifndef COPS_ENGINE_RETENTION_SWEEPER_H_
#define COPS_ENGINE_RETENTION_SWEEPER_H_

// Removes what has outlived its time, in the background: documents past their expiry
// (DocumentRecord::expires_unix_micros; checks stop reporting them at that moment already,
// the sweep frees their postings, record and text) and audit entries older than the audit
// retention. One thread sweeps when Start() is called, so that a sweep a crash interrupted
// resumes at the next start, then once every interval.
//
// Expired documents go in batches, each one atomic index write (Index::RemoveExpired) under
// the registration lock (IndexGenerations::WithWriter), so registrations wait for one batch
// at most and a key rotation's catch-up sees every removal. Under a registration log the
// removal is a logged write instead (RetentionSweeperOptions::documents,
// docs/scale-out.md).
//
// Thread-safety: SweepOnce() may be called from any thread, also while the background
// thread runs (each batch is atomic and idempotent).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/document_writes.h"
#include "engine/index_generations.h"
#include "engine/wall_clock.h"
#include "storage/principal_store.h"

namespace cops {

// How expired documents leave the index.
enum class ExpiredDocuments {
  kRemoveHere,       // Index::RemoveExpired in batches: a copsd on its own
  kUnregisterInLog,  // an unregistration each through RetentionSweeperOptions::log_writes
                     // (copsd --log): every node removes it at the same point of the log
  kLeaveToPrimary,   // none (copsd --follow): the primary's unregistrations remove them
};

struct RetentionSweeperOptions {
  // Time between the end of one sweep and the start of the next (copsd --sweep-interval).
  // Expired documents stop being reported at their expiry whatever this is; it bounds how
  // long they keep their disk space.
  std::chrono::milliseconds interval{std::chrono::minutes(1)};
  // Documents removed per index write. Larger batches remove faster; the registration lock
  // is held for one batch.
  size_t documents_per_batch = 256;
  ExpiredDocuments documents = ExpiredDocuments::kRemoveHere;
  // With kUnregisterInLog: the writes of the registration log (not owned; must outlive the
  // sweeper).
  DocumentWrites* log_writes = nullptr;
  // Audit entries older than this many seconds are removed (copsd --audit-retention);
  // 0 = kept forever.
  int64_t audit_retention_seconds = int64_t{90} * 86400;
  size_t audit_entries_per_batch = 4096;
  // Wall clock in microseconds since the epoch (replaceable for tests).
  std::function<int64_t()> now_micros = WallClockMicros;
};

struct SweepResult {
  uint64_t documents_removed = 0;
  uint64_t audit_entries_removed = 0;
};

class RetentionSweeper {
 public:
  // Neither is owned; both must outlive the sweeper. `audit_store` may be null (no audit
  // entries are swept).
  RetentionSweeper(IndexGenerations* generations, PrincipalStore* audit_store,
                   RetentionSweeperOptions options);
  // Stops the background thread (a batch in progress finishes first).
  ~RetentionSweeper();
  RetentionSweeper(const RetentionSweeper&) = delete;
  RetentionSweeper& operator=(const RetentionSweeper&) = delete;

  // Starts the background thread: one sweep now, then one every interval. A failed sweep is
  // logged and tried again at the next interval. Calling it twice does nothing.
  void Start();

  // Sweeps now on the caller's thread: every document expired by now, batch by batch (as
  // options.documents says), and every audit entry older than the retention. The index's,
  // the log's or the store's error stops the sweep (what was removed before stays
  // removed).
  absl::StatusOr<SweepResult> SweepOnce();

 private:
  void Run();
  absl::StatusOr<uint64_t> SweepDocuments(int64_t now);

  IndexGenerations* const generations_;
  PrincipalStore* const audit_store_;
  const RetentionSweeperOptions options_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started by Start()
};

}  // namespace cops

#endif  // COPS_ENGINE_RETENTION_SWEEPER_H_
