#include "replication/log_replica.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "core/status_macros.h"
#include "logging/log_event.h"

namespace cops {
namespace {

// Refusals every node reaches alike for the same event: an outcome, not a failed apply.
// RESOURCE_EXHAUSTED is not one: a converter's time budget, a full disk and a node's own
// --max-document-bytes say nothing about what another node does with the event.
bool IsDeterministicRefusal(const absl::Status& status) {
  return absl::IsInvalidArgument(status) || absl::IsNotFound(status) ||
         absl::IsAlreadyExists(status);
}

}  // namespace

LogReplica::LogReplica(IndexGenerations* generations, bool ids_from_log_sequence)
    : generations_(generations),
      ids_from_log_sequence_(ids_from_log_sequence),
      applied_at_start_(generations->Current()->index()->AppliedLogSequence()) {}

absl::Status LogReplica::CheckIndexFollowsLog() const {
  const std::shared_ptr<CopyDetector> detector = generations_->Current();
  const uint64_t documents = detector->Stats().documents;
  if (documents > 0 && detector->index()->AppliedLogSequence() == 0) {
    return absl::FailedPreconditionError(
        "the index holds " + std::to_string(documents) +
        " documents registered without the registration log; --log and --follow need an "
        "index built from the log (start on an empty data directory)");
  }
  return absl::OkStatus();
}

uint64_t LogReplica::AppliedLogSequence() const {
  return generations_->Current()->index()->AppliedLogSequence();
}

absl::Status LogReplica::Apply(uint64_t sequence, const RegistrationEvent& event) {
  absl::StatusOr<RegisterResultInfo> outcome;
  absl::Status written = generations_->WithWriter([&](CopyDetector& detector) -> absl::Status {
    if (event.kind == RegistrationEventKind::kUnregister) {
      absl::Status s = detector.Unregister(event.doc_id, sequence);
      outcome = s.ok() ? absl::StatusOr<RegisterResultInfo>(RegisterResultInfo{}) : s;
      // NOT_FOUND has recorded the sequence already (Index::Unregister).
      return absl::IsNotFound(s) ? absl::OkStatus() : s;
    }
    // A new document gets id `sequence`: unique in the stream, whatever the partition. The
    // next id only grows, and each event creates at most one document, so it is free.
    if (ids_from_log_sequence_) COPS_RETURN_IF_ERROR(detector.index()->RaiseNextDocId(sequence));
    outcome = detector.Register(event.content, static_cast<DocumentFormat>(event.format),
                                event.metadata, sequence);
    if (outcome.ok()) return absl::OkStatus();
    if (!IsDeterministicRefusal(outcome.status())) return outcome.status();
    // Every node refuses it alike (a duplicate, text that is no text): recorded as applied
    // without effect. Logged, so that a node that refused what others registered shows.
    LogEvent(LogLevel::kInfo, "log_event_refused",
             {{"sequence", std::to_string(sequence)}, {"error", outcome.status().ToString()}});
    return detector.index()->SkipLogSequence(sequence);
  });
  if (!written.ok()) {
    LogEvent(LogLevel::kWarn, "log_apply_failed",
             {{"sequence", std::to_string(sequence)},
              {"error", written.ToString()},
              {"action", "retried; later events wait for it"}});
    return written;
  }
  Record(sequence, std::move(outcome));
  return absl::OkStatus();
}

absl::Status LogReplica::SetAside(uint64_t sequence, const absl::Status& why) {
  COPS_RETURN_IF_ERROR(generations_->WithWriter([sequence](CopyDetector& detector) {
    return detector.index()->SkipLogSequence(sequence);
  }));
  LogEvent(LogLevel::kError, "log_event_set_aside",
           {{"sequence", std::to_string(sequence)}, {"error", why.ToString()}});
  Record(sequence, why);
  return absl::OkStatus();
}

absl::StatusOr<std::string> LogReplica::LogStreamIdentity() const {
  return generations_->Current()->index()->LogStreamIdentity();
}

absl::Status LogReplica::RecordLogStreamIdentity(const std::string& identity) {
  COPS_RETURN_IF_ERROR(generations_->Current()->index()->RecordLogStreamIdentity(identity));
  LogEvent(LogLevel::kInfo, "log_stream_recorded", {{"stream", identity}});
  return absl::OkStatus();
}

absl::StatusOr<DocumentRecord> LogReplica::Prepare(std::string_view content,
                                                   DocumentFormat format,
                                                   const DocumentRecord& metadata) const {
  return generations_->Current()->Prepare(content, format, metadata);
}


void LogReplica::Record(uint64_t sequence, absl::StatusOr<RegisterResultInfo> outcome) {
  absl::MutexLock lock(&mu_);
  outcomes_.insert_or_assign(sequence, std::move(outcome));
  last_recorded_ = std::max(last_recorded_, sequence);
  while (outcomes_.size() > kKeptOutcomes) outcomes_.erase(outcomes_.begin());
}

absl::StatusOr<RegisterResultInfo> LogReplica::WaitForOutcome(
    uint64_t sequence, std::chrono::steady_clock::time_point deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, sequence]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return outcomes_.count(sequence) > 0;
  };
  const absl::Time until = absl::Now() + absl::FromChrono(deadline - std::chrono::steady_clock::now());
  if (!mu_.AwaitWithDeadline(absl::Condition(&ready), until)) {
    return absl::DeadlineExceededError("log event " + std::to_string(sequence) +
                                       " is in the log but not yet applied on this node");
  }
  auto it = outcomes_.find(sequence);
  absl::StatusOr<RegisterResultInfo> outcome = std::move(it->second);
  outcomes_.erase(it);
  return outcome;
}

absl::StatusOr<RegisterResultInfo> LogReplica::OutcomeOf(
    uint64_t sequence, std::chrono::steady_clock::time_point deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, sequence]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return outcomes_.count(sequence) > 0 || last_recorded_ >= sequence;
  };
  const absl::Time until =
      absl::Now() + absl::FromChrono(deadline - std::chrono::steady_clock::now());
  // Wait for the record, not for the index: Apply records an event's outcome just after
  // the index shows it applied, and a caller between the two must not get NOT_FOUND.
  if (sequence > applied_at_start_ && !mu_.AwaitWithDeadline(absl::Condition(&ready), until)) {
    return absl::UnavailableError("log event " + std::to_string(sequence) +
                                  " is not yet applied on this node");
  }
  auto it = outcomes_.find(sequence);
  if (it == outcomes_.end()) {
    return absl::NotFoundError("the outcome of log event " + std::to_string(sequence) +
                               " is no longer kept on this node");
  }
  return it->second;
}

absl::Status LogReplica::AwaitApplied(uint64_t sequence,
                                      std::chrono::steady_clock::time_point deadline,
                                      const std::function<absl::StatusOr<bool>()>& caught_up) {
  const absl::Time until =
      absl::Now() + absl::FromChrono(deadline - std::chrono::steady_clock::now());
  while (true) {
    const uint64_t applied = AppliedLogSequence();
    if (applied >= sequence) return absl::OkStatus();
    if (caught_up) {
      absl::StatusOr<bool> done = caught_up();
      if (done.ok() && *done) return absl::OkStatus();
    }
    if (absl::Now() >= until) {
      return absl::UnavailableError("this node has applied the registration log up to " +
                                    std::to_string(applied) + ", not yet up to " +
                                    std::to_string(sequence));
    }
    // Until the next apply, or the next poll of `caught_up`.
    absl::MutexLock lock(&mu_);
    auto moved = [this, applied]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return last_recorded_ > applied;
    };
    mu_.AwaitWithDeadline(absl::Condition(&moved), std::min(until, absl::Now() + kCaughtUpPoll));
  }
}

absl::Status ReplicaPosition::AwaitApplied(uint64_t sequence,
                                           std::chrono::steady_clock::time_point deadline) {
  COPS_RETURN_IF_ERROR(applier_->Refusal());
  return replica_->AwaitApplied(sequence, deadline, [this] { return applier_->CaughtUp(); });
}

absl::StatusOr<RegisterResultInfo> ReplicaPosition::OutcomeOf(
    uint64_t sequence, std::chrono::steady_clock::time_point deadline) {
  return replica_->OutcomeOf(sequence, deadline);
}

absl::StatusOr<RegisterResultInfo> LoggedWrites::PublishAndWait(const RegistrationEvent& event,
                                                                uint64_t* sequence_out) {
  // Read before publishing: the event may be applied here before its acknowledgement comes.
  const uint64_t applied = replica_->AppliedLogSequence();
  COPS_ASSIGN_OR_RETURN(uint64_t sequence, log_->Publish(event));
  if (sequence_out != nullptr) *sequence_out = sequence;
  // JetStream numbered the event at or below what this node had applied: the stream lost its
  // tail or was created anew, and this node would take the event for one it applied.
  if (sequence <= applied) {
    return absl::FailedPreconditionError(
        "stream " + log_->stream() + " acknowledged this write as event " +
        std::to_string(sequence) + ", but this node has applied the log up to event " +
        std::to_string(applied) + ": the stream lost its tail or was recreated (it is in that "
        "stream, not applied here)");
  }
  return replica_->WaitForOutcome(sequence, std::chrono::steady_clock::now() + apply_timeout_);
}

absl::StatusOr<RegisterResultInfo> LoggedWrites::Register(std::string_view content,
                                                          DocumentFormat format,
                                                          const DocumentRecord& metadata) {
  RegistrationEvent event;
  event.kind = RegistrationEventKind::kRegister;
  event.content = std::string(content);
  event.format = static_cast<uint32_t>(format);
  event.metadata = metadata;
  // Recorded once, here: every node stores the same registration time.
  event.metadata.registered_unix_micros = absl::ToUnixMicros(absl::Now());
  // Refused here, before the log: an event every node would refuse only costs them work,
  // and one this node cannot convert in time would hold back every node's applier.
  COPS_RETURN_IF_ERROR(replica_->Prepare(content, format, event.metadata).status());
  return PublishAndWait(event);
}

absl::StatusOr<uint64_t> LoggedWrites::Unregister(DocId id) {
  RegistrationEvent event;
  event.kind = RegistrationEventKind::kUnregister;
  event.doc_id = id;
  uint64_t sequence = 0;
  COPS_RETURN_IF_ERROR(PublishAndWait(event, &sequence).status());
  return sequence;
}

absl::Status ReadOnlyWrites::Refusal() const {
  return absl::FailedPreconditionError(
      "this copsd is a read-only replica following the registration log; register and "
      "unregister on the primary (" + where_ + ")");
}

absl::StatusOr<RegisterResultInfo> ReadOnlyWrites::Register(std::string_view /*content*/,
                                                            DocumentFormat /*format*/,
                                                            const DocumentRecord& /*metadata*/) {
  return Refusal();
}

absl::StatusOr<uint64_t> ReadOnlyWrites::Unregister(DocId /*id*/) { return Refusal(); }

}  // namespace cops
