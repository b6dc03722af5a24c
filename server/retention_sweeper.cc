#include "server/retention_sweeper.h"

#include <string>
#include <utility>

#include "absl/time/time.h"
#include "core/status_macros.h"
#include "server/request_log.h"

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

absl::StatusOr<SweepResult> RetentionSweeper::SweepOnce() {
  SweepResult result;
  const int64_t now = options_.now_micros();
  for (;;) {
    size_t removed = 0;
    COPS_RETURN_IF_ERROR(generations_->WithWriter([&](CopyDetector& detector) -> absl::Status {
      COPS_ASSIGN_OR_RETURN(removed,
                            detector.index()->RemoveExpired(now, options_.documents_per_batch));
      return absl::OkStatus();
    }));
    if (removed == 0) break;
    result.documents_removed += removed;
  }
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
