#ifndef COPS_REPLICATION_LOG_REPLICA_H_
#define COPS_REPLICATION_LOG_REPLICA_H_

// copsd's side of the registration log (replication/, docs/scale-out.md):
//
//   LogReplica      applies log events to the live index through the same CopyDetector
//                   path as a local registration (the LogSink of replication/log_applier.h),
//                   and lets a caller wait for the outcome of one event.
//   LoggedWrites    copsd --log: a registration or unregistration is published to the log,
//                   acknowledged by JetStream, applied here by the LogReplica, and answered
//                   with the outcome of that apply.
//   ReadOnlyWrites  copsd --follow: writes are refused with FAILED_PRECONDITION naming where
//                   to register.
//   ReplicaPosition what a router asks of a replica: to wait until it has applied the log up
//                   to a sequence (read-your-writes), and the outcome of one event.
//
// Thread-safety: all three are safe for concurrent use.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/copy_detector.h"
#include "engine/document_writes.h"
#include "engine/index_generations.h"
#include "replication/log_applier.h"
#include "replication/registration_log.h"

namespace cops {

// Where a node stands in the registration log, for calls that must see a given event.
class LogPosition {
 public:
  virtual ~LogPosition() = default;
  // OK once this node reflects every event it consumes up to `sequence`; UNAVAILABLE when
  // it does not by `deadline`.
  virtual absl::Status AwaitApplied(uint64_t sequence,
                                    std::chrono::steady_clock::time_point deadline) = 0;
  // The outcome of event `sequence` on this node, once applied (as LogReplica::OutcomeOf).
  virtual absl::StatusOr<RegisterResultInfo> OutcomeOf(
      uint64_t sequence, std::chrono::steady_clock::time_point deadline) = 0;
};

class LogReplica : public LogSink {
 public:
  // `generations` is not owned and must outlive the replica. With `ids_from_log_sequence`
  // (a partitioned cluster) a registration event creates its document under the event's
  // sequence as id, so ids are unique across partitions and the same on every replica.
  explicit LogReplica(IndexGenerations* generations, bool ids_from_log_sequence = false);

  // FAILED_PRECONDITION when the live index holds documents that did not come from the log
  // (registered before --log/--follow was given): they would be missing on every other node.
  absl::Status CheckIndexFollowsLog() const;

  uint64_t AppliedLogSequence() const override;
  // Registers or unregisters through the live CopyDetector with the event's sequence. A
  // refusal every node reaches alike for the same event (INVALID_ARGUMENT: the document does
  // not convert or is too short; an unknown id; a duplicate) is an outcome, recorded as
  // applied. Any other failure is this node's own and passes (a full disk, a converter past
  // its time budget, a local limit such as a smaller --max-document-bytes:
  // RESOURCE_EXHAUSTED): it is logged ("log_apply_failed") and returned, and the applier
  // counts it and tries the event again; it is never skipped, or this node's ids would shift.
  absl::Status Apply(uint64_t sequence, const RegistrationEvent& event) override;
  // Records the malformed event `sequence` as applied without effect, logged
  // ("log_event_set_aside"). Its outcome is `why`.
  absl::Status SetAside(uint64_t sequence, const absl::Status& why) override;
  // Index::LogStreamIdentity of the live index, and recording it there.
  absl::StatusOr<std::string> LogStreamIdentity() const override;
  absl::Status RecordLogStreamIdentity(const std::string& identity) override;

  // What the live detector makes of a registration (CopyDetector::Prepare), without
  // writing it: what the log's writer refuses before publishing.
  absl::StatusOr<DocumentRecord> Prepare(std::string_view content, DocumentFormat format,
                                         const DocumentRecord& metadata) const;


  // The outcome of applying event `sequence`: a RegisterResultInfo or the refusal (for an
  // unregistration, a default RegisterResultInfo). DEADLINE_EXCEEDED when it is not applied
  // by `deadline`. Each outcome can be taken once; the latest kKeptOutcomes are kept.
  absl::StatusOr<RegisterResultInfo> WaitForOutcome(
      uint64_t sequence, std::chrono::steady_clock::time_point deadline);

  // The outcome of event `sequence` without taking it, waiting until it is applied and its
  // outcome recorded (just after the index shows it applied). UNAVAILABLE when that is not
  // done by `deadline`; NOT_FOUND when it was applied but its outcome is not kept (applied
  // before this replica was constructed, or kKeptOutcomes events ago).
  absl::StatusOr<RegisterResultInfo> OutcomeOf(uint64_t sequence,
                                               std::chrono::steady_clock::time_point deadline);

  // OK once AppliedLogSequence() >= sequence or `caught_up` says every event this node
  // consumes is applied (a partition's replica applies only its partition's events: its
  // applied sequence may stay below `sequence` for ever). `caught_up` is asked again after
  // each apply and every kCaughtUpPoll. UNAVAILABLE at `deadline`.
  absl::Status AwaitApplied(uint64_t sequence, std::chrono::steady_clock::time_point deadline,
                            const std::function<absl::StatusOr<bool>()>& caught_up);

  static constexpr size_t kKeptOutcomes = 4096;
  static constexpr absl::Duration kCaughtUpPoll = absl::Milliseconds(20);

 private:
  void Record(uint64_t sequence, absl::StatusOr<RegisterResultInfo> outcome);

  IndexGenerations* const generations_;
  const bool ids_from_log_sequence_;
  // The index's applied sequence when constructed: events up to it have no outcome here.
  const uint64_t applied_at_start_;
  absl::Mutex mu_;
  std::map<uint64_t, absl::StatusOr<RegisterResultInfo>> outcomes_ ABSL_GUARDED_BY(mu_);
  uint64_t last_recorded_ ABSL_GUARDED_BY(mu_) = 0;  // sequence of the last Record
};

// The LogPosition of a node that consumes the log through `applier` into `replica`; neither
// is owned, both must outlive it.
class ReplicaPosition : public LogPosition {
 public:
  ReplicaPosition(LogReplica* replica, const LogApplier* applier)
      : replica_(replica), applier_(applier) {}
  // The applier's Refusal (FAILED_PRECONDITION) when it refused the stream, else as
  // LogReplica::AwaitApplied.
  absl::Status AwaitApplied(uint64_t sequence,
                            std::chrono::steady_clock::time_point deadline) override;
  absl::StatusOr<RegisterResultInfo> OutcomeOf(
      uint64_t sequence, std::chrono::steady_clock::time_point deadline) override;

 private:
  LogReplica* const replica_;
  const LogApplier* const applier_;
};

class LoggedWrites : public DocumentWrites {
 public:
  // None is owned; both must outlive this. A write waits up to `apply_timeout` for the
  // local apply after JetStream's acknowledgement.
  LoggedWrites(RegistrationLog* log, LogReplica* replica, std::chrono::milliseconds apply_timeout)
      : log_(log), replica_(replica), apply_timeout_(apply_timeout) {}

  // A registration this node refuses (LogReplica::Prepare: it does not convert, is too
  // large or too short) is refused before it is published: what reaches the log is what
  // every node can apply. UNAVAILABLE when JetStream did not acknowledge the event (it may
  // still be in the log); DEADLINE_EXCEEDED when it was acknowledged but not applied here in
  // time (it will be).
  absl::StatusOr<RegisterResultInfo> Register(std::string_view content, DocumentFormat format,
                                              const DocumentRecord& metadata) override;
  // The event's log sequence, once this node applied it.
  absl::StatusOr<uint64_t> Unregister(DocId id) override;

 private:
  // `sequence`, when not null, is set to the event's log sequence once JetStream numbered it.
  absl::StatusOr<RegisterResultInfo> PublishAndWait(const RegistrationEvent& event,
                                                    uint64_t* sequence = nullptr);

  RegistrationLog* const log_;
  LogReplica* const replica_;
  const std::chrono::milliseconds apply_timeout_;
};

class ReadOnlyWrites : public DocumentWrites {
 public:
  // `where` names where registrations go (the primary, or the log's URL).
  explicit ReadOnlyWrites(std::string where) : where_(std::move(where)) {}
  absl::StatusOr<RegisterResultInfo> Register(std::string_view content, DocumentFormat format,
                                              const DocumentRecord& metadata) override;
  absl::StatusOr<uint64_t> Unregister(DocId id) override;

 private:
  absl::Status Refusal() const;
  const std::string where_;
};

}  // namespace cops

#endif  // COPS_REPLICATION_LOG_REPLICA_H_
