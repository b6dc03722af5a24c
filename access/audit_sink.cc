#include "access/audit_sink.h"

#include <string>
#include <utility>

#include "spdlog/spdlog.h"

namespace cops {
namespace {

// A full queue can drop thousands of records a second: log the first drop and then every
// power of two, which still says how many were lost.
bool WorthLogging(uint64_t dropped) { return (dropped & (dropped - 1)) == 0; }

}  // namespace

AuditSink::AuditSink(Writer write, AuditSinkOptions options)
    : AuditSink(std::move(write), nullptr, std::move(options)) {}

AuditSink::AuditSink(Writer write, Reader read, AuditSinkOptions options)
    : write_(std::move(write)),
      read_(std::move(read)),
      options_(std::move(options)),
      thread_([this] { Run(); }) {}

AuditSink::~AuditSink() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void AuditSink::Record(std::string_view checker, std::vector<AuditRecord> hits) {
  if (hits.empty()) return;
  const int64_t now = options_.now_micros();
  uint64_t dropped_now = 0;
  uint64_t dropped_total = 0;
  {
    absl::MutexLock lock(&mu_);
    for (AuditRecord& hit : hits) {
      if (queue_.size() >= options_.max_queued_records) {
        ++dropped_now;
        continue;
      }
      hit.unix_micros = now;
      hit.checker = std::string(checker);
      queue_.push_back(std::move(hit));
    }
    counters_.dropped += dropped_now;
    dropped_total = counters_.dropped;
  }
  if (dropped_now > 0 && WorthLogging(dropped_total)) {
    spdlog::error("audit queue full ({} records): {} audit records of a check by '{}' dropped, "
                  "{} dropped since start",
                  options_.max_queued_records, dropped_now, checker, dropped_total);
  }
}

void AuditSink::Run() {
  for (;;) {
    std::vector<AuditRecord> batch;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &AuditSink::HasWork));
      if (queue_.empty()) return;  // stopping, and everything is written
      batch.swap(queue_);
      writing_ = true;
    }
    const absl::Status s = write_(batch);
    uint64_t failed_total = 0;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      (s.ok() ? counters_.written : counters_.failed) += batch.size();
      failed_total = counters_.failed;
    }
    if (!s.ok()) {
      spdlog::error("{} audit records lost ({} since start): {}", batch.size(), failed_total,
                    s.ToString());
    }
  }
}

void AuditSink::Flush() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &AuditSink::Idle));
}

absl::StatusOr<std::vector<AuditRecord>> AuditSink::Matches(const MatchQuery& query) const {
  if (read_ == nullptr) return absl::UnimplementedError("this server keeps no audit trail");
  return read_(query);
}

AuditSink::Counters AuditSink::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

AuditSink::Writer AppendTo(PrincipalStore* store) {
  return [store](const std::vector<AuditRecord>& records) { return store->AppendAudit(records); };
}

AuditSink::Reader MatchesFrom(const PrincipalStore* store) {
  return [store](const MatchQuery& q) {
    return store->QueryAuditOfOwner(q.owner, q.doc_id, q.since_unix_micros, q.limit);
  };
}

}  // namespace cops
