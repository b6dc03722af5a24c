#include "engine/retention_sweeper.h"

#include <set>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "core/status_macros.h"
#include "logging/log_event.h"

namespace cops {

RetentionSweeper::RetentionSweeper(IndexGenerations* generations, PrincipalStore* audit_store,
                                   RetentionSweeperOptions options)
    : generations_(generations), audit_store_(audit_store), options_(std::move(options)) {}

RetentionSweeper::~RetentionSweeper() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void RetentionSweeper::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

absl::StatusOr<uint64_t> RetentionSweeper::SweepDocuments(int64_t now) {
  uint64_t total = 0;
  const size_t batch = options_.documents_per_batch;
  switch (options_.documents) {
    case ExpiredDocuments::kLeaveToPrimary:
      return 0;
    case ExpiredDocuments::kRemoveHere:
      for (;;) {
        size_t removed = 0;
        COPS_RETURN_IF_ERROR(generations_->WithWriter([&](CopyDetector& d) -> absl::Status {
          COPS_ASSIGN_OR_RETURN(removed, d.index()->RemoveExpired(now, batch));
          return absl::OkStatus();
        }));
        if (removed == 0) return total;
        total += removed;
      }
    case ExpiredDocuments::kUnregisterInLog:
      if (options_.log_writes == nullptr) {
        return absl::FailedPreconditionError("no registration log to unregister through");
      }
      for (std::set<DocId> sent;;) {
        // Not under the registration lock: the log's apply takes it.
        COPS_ASSIGN_OR_RETURN(std::vector<DocId> due,
                              generations_->Current()->index()->ExpiredDocuments(now, batch));
        if (due.empty()) return total;
        for (DocId id : due) {
          if (!sent.insert(id).second) {
            return absl::InternalError("expired document " + std::to_string(id) +
                                       " is still registered after its unregistration");
          }
          absl::Status s = options_.log_writes->Unregister(id).status();
          if (!s.ok() && !absl::IsNotFound(s)) return s;  // NOT_FOUND: unregistered already
          ++total;
        }
      }
  }
  return total;
}

absl::StatusOr<SweepResult> RetentionSweeper::SweepOnce() {
  SweepResult result;
  const int64_t now = options_.now_micros();
  COPS_ASSIGN_OR_RETURN(result.documents_removed, SweepDocuments(now));
  if (audit_store_ != nullptr && options_.audit_retention_seconds > 0) {
    const int64_t cutoff = now - options_.audit_retention_seconds * 1000000;
    for (;;) {
      COPS_ASSIGN_OR_RETURN(size_t removed,
                            audit_store_->RemoveAuditBefore(cutoff, options_.audit_entries_per_batch));
      if (removed == 0) break;
      result.audit_entries_removed += removed;
    }
  }
  return result;
}

void RetentionSweeper::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.Unlock();
    absl::StatusOr<SweepResult> swept = SweepOnce();
    if (!swept.ok()) {
      LogEvent(LogLevel::kError, "sweep_failed", {{"error", swept.status().ToString()}});
    } else if (swept->documents_removed > 0 || swept->audit_entries_removed > 0) {
      LogEvent(LogLevel::kInfo, "swept",
               {{"expired_documents", std::to_string(swept->documents_removed)},
                {"audit_entries", std::to_string(swept->audit_entries_removed)}});
    }
    mu_.Lock();
    mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                         absl::Milliseconds(options_.interval.count()));
  }
}

}  // namespace cops
