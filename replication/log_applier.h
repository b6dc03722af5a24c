#ifndef COPS_REPLICATION_LOG_APPLIER_H_
#define COPS_REPLICATION_LOG_APPLIER_H_

// The reading end of the registration log: a background thread consumes the stream through a
// durable pull consumer and hands each event, in log order, to a LogSink that applies it to
// the local index exactly once (docs/scale-out.md, "Exactly-once apply").
//
// Exactly once: the sink writes the event's sequence in the same RocksDB WriteBatch as its
// effect (Index::AppliedLogSequence), and an event is acknowledged to JetStream only after
// that write. An event at or below the applied sequence (redelivered after a crash between
// the write and the ack) is acknowledged and skipped. Events are applied strictly in
// sequence: an event beyond applied + 1 (a redelivery that overtook an earlier one) is
// declined and fetched again later. A consumer filtered to one partition's subject sees
// sequences with gaps, so the stream sequence cannot show a missing event; the consumer's
// own delivery numbers (1, 2, ... from its creation) can: it is recreated at applied + 1
// after a failed apply and whenever a delivery number is skipped or repeated (a fetched batch
// lost with its NATS server), so that JetStream delivers every event after the applied one,
// in order. Every start creates a consumer at applied + 1 too, and every consumer a node
// creates has a name none of its consumers had before (LogApplierOptions::durable).
//
// An event that fails to apply (the sink's error: a full disk, a converter past its time
// budget) is never skipped: it is declined and tried again, after a wait that doubles with
// each failure (retry_wait_ms up to max_retry_wait_ms), and counted. Bytes that are no event
// at all (DATA_LOSS from the decoder) are set aside (LogSink::SetAside), acknowledged and
// counted, so that they do not hold back the events after them on every node. Any consumer is
// recreated when fetches find nothing for a second while JetStream awaits acks for deliveries the
// applier never received (the lost batch was the last one), rather than wait out the ack wait (30
// s).
//
// Thread-safety: Start/Stop from one thread; the sink is called from the applier's thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "replication/jetstream.h"
#include "replication/registration_event.h"

struct __natsSubscription;  // NOLINT(bugprone-reserved-identifier): libnats names its types so

namespace cops {

// Where events are applied: the local index (replication/log_replica.h wires the detector).
class LogSink {
 public:
  virtual ~LogSink() = default;
  // The sequence of the last event applied (0 = none).
  virtual uint64_t AppliedLogSequence() const = 0;
  // Applies event `sequence` (== AppliedLogSequence() + 1). OK when it is applied, also when
  // it deterministically changes nothing (a document that does not convert): the sequence is
  // then recorded as applied. An error (a failed write) leaves it unapplied; it is retried.
  virtual absl::Status Apply(uint64_t sequence, const RegistrationEvent& event) = 0;
  // Records event `sequence` (== AppliedLogSequence() + 1) as applied without effect: its
  // bytes are no event that any node can apply (`why`: the decoder's DATA_LOSS). An error (a
  // failed write) leaves it unapplied; it is tried again.
  virtual absl::Status SetAside(uint64_t sequence, const absl::Status& why) = 0;
  // The identity of the stream the applied events came from (LogStreamIdentityOf), "" when
  // none is recorded; and recording it, durably, before the first event is applied.
  virtual absl::StatusOr<std::string> LogStreamIdentity() const = 0;
  virtual absl::Status RecordLogStreamIdentity(const std::string& identity) = 0;
};

// A stream's identity: its name and the time JetStream created it, "<name>@<unix ns>". A
// stream deleted and created anew under the same name has another.
std::string LogStreamIdentityOf(const std::string& stream, int64_t created_unix_nanos);

struct LogApplierOptions {
  // This node's consumers' names: "<durable>~<generation>", each generation above every
  // earlier one, so that no name is ever used twice (nats-server 2.9 can bring a consumer
  // recreated under its old name back in an earlier incarnation's state); the node's earlier
  // consumers, and one named `durable` itself (made by a build before generations), are
  // deleted once a new one exists. Each index node needs its own: 1 to 200 printable ASCII
  // characters without spaces, '.', '*', '>', '/', '\\' or '~' (INVALID_ARGUMENT).
  std::string durable = "cops-index";
  // Only events published to this subject are consumed (a partition's subject,
  // replication/partitioning.h); empty = every event of the stream.
  std::string filter_subject;
  int fetch_batch = 256;          // events fetched per pull request
  int64_t fetch_wait_ms = 200;    // how long a pull waits for new events (bounds Stop's delay)
  // How long JetStream waits for an ack before redelivering an event, in milliseconds.
  int64_t ack_wait_ms = 30000;
  // After a failed apply, before trying again; doubled at each failure of the same event
  // up to max_retry_wait_ms.
  int64_t retry_wait_ms = 200;
  int64_t max_retry_wait_ms = 5000;
};

// What an applier has met since it started, for metrics.
struct LogApplierHealth {
  uint64_t failed_applies = 0;  // applies that failed and are tried again (never skipped)
  uint64_t set_aside = 0;       // malformed events recorded as applied without effect
  bool refused = false;         // the stream was refused (LogApplier::Refusal): nothing applies
};

// What the applier does with one delivered event (ClassifyDelivery).
enum class DeliveryAction {
  kApply,    // the next event: apply it, then acknowledge
  kSkip,     // applied before (a redelivery): acknowledge only
  kDecline,  // the whole stream's event beyond applied + 1: decline, fetch again later
  kRestart,  // a filtered consumer's delivery out of turn: recreate it at applied + 1
};

// The decision for an event of stream sequence `stream_sequence` delivered as the consumer's
// delivery number `delivery`, after the sink applied `applied` and this consumer's last
// delivery handled was `last_delivery` (0 for a consumer just created). `filtered`: the
// consumer reads one partition's subject.
DeliveryAction ClassifyDelivery(bool filtered, uint64_t applied, uint64_t last_delivery,
                                uint64_t stream_sequence, uint64_t delivery);

class LogApplier {
 public:
  // Creates a consumer for this node starting after sink->AppliedLogSequence() (and deletes the
  // node's earlier ones); then applies events on a background thread until Stop.
  // FAILED_PRECONDITION, naming the stream and what differs, when the sink has applied events and
  // the stream is missing (deleted), is another stream than the one they came from (deleted and
  // created anew: another creation time than the sink's LogStreamIdentity), was trimmed above the
  // sink's applied sequence (events it lacks are gone), or ends below it (it lost its tail:
  // its new events would be skipped). A sink with no identity recorded records the
  // stream's. Otherwise errors as for JetStream::Connect. `jetstream` and `sink` are not
  // owned and must outlive the applier.
  //
  // The same checks run again whenever the consumer is recreated and after every second
  // without events; once one fails the applier applies nothing more and Refusal() says why
  // (the stream will not become the right one again: the node needs an operator).
  static absl::StatusOr<std::unique_ptr<LogApplier>> Start(JetStream* jetstream, LogSink* sink,
                                                           LogApplierOptions options);
  // Stops (as Stop) and unsubscribes; the consumer stays until the next Start deletes it.
  ~LogApplier();
  LogApplier(const LogApplier&) = delete;
  LogApplier& operator=(const LogApplier&) = delete;

  // Ends the background thread after the event in hand; no event is acknowledged after.
  void Stop();
  // The name of the consumer the applier reads now (it changes when it is recreated).
  std::string ConsumerName() const;
  // The status of the last failed apply or fetch (OK when the last round succeeded).
  absl::Status LastError() const;
  // FAILED_PRECONDITION once the stream was found missing, recreated or truncated while
  // running (see Start): nothing is applied after; OK otherwise.
  absl::Status Refusal() const;

  // Whether every event of this consumer's subject that is in the stream now has been
  // applied: for one partition's subject, whether the sink has applied the subject's last
  // event in the stream; otherwise, whether the consumer has nothing pending or awaiting an
  // ack. Asks JetStream. With partitions, a node's applied sequence stops at its partition's
  // last event, so this is how it tells that it has seen "every event up to sequence N".
  // Errors as for JetStream::Connect.
  absl::StatusOr<bool> CaughtUp() const;

  // How many times the consumer was recreated after it started (a skipped delivery or a
  // failed apply of a filtered consumer).
  int Restarts() const { return restarts_.load(std::memory_order_relaxed); }
  LogApplierHealth Health() const {
    return {failed_applies_.load(std::memory_order_relaxed),
            set_aside_.load(std::memory_order_relaxed), refused_.load()};
  }
  // Calls `listener` with the Refusal once the stream is refused (at once when it already
  // is; a refusal racing this call may be told twice), on the applier's thread or the
  // caller's: copsd turns its health to NOT_SERVING
  // there. Replaces an earlier listener; nullptr removes it, and once that returns the old
  // listener is not running and is never called again.
  void OnRefusal(std::function<void(const absl::Status&)> listener);

 private:
  LogApplier(JetStream* jetstream, LogSink* sink, LogApplierOptions options,
             __natsSubscription* subscription, std::string consumer, uint64_t generation);
  // What follows one handled message: the next one, or the rest of its batch declined and
  // fetched again (after retry_wait_ms) by this consumer or by a recreated one.
  enum class Outcome { kNext, kRetry, kRestart };

  void Run();
  // Applies, skips or declines one fetched message.
  Outcome Handle(void* msg);
  // Recreates the consumer at the sink's applied sequence and subscribes to it again.
  absl::Status Restart();
  // Whether JetStream awaits acks for events this applier never received (a fetched batch
  // lost with its NATS server or connection), asked after kLostDeliveryCheckMs of empty
  // fetches: the consumer is then recreated instead of waiting out the ack wait.
  bool DeliveriesLost();
  // Whether the consumer stopped delivering: the stream holds an event of its subject beyond
  // the applied sequence at two looks in a row (asked with DeliveriesLost, and after a
  // second of failing fetches) with nothing applied in between; it is then recreated.
  bool Stalled();
  // For a filtered consumer's first delivery, event `first_delivered`: the stream sequence
  // of an event of its subject after the applied one and before `first_delivered`, which the
  // consumer skipped (0: none, or JetStream did not answer). A consumer made at applied + 1
  // starts there, but nats-server has had recreated consumers come back with a state of
  // their name's earlier incarnation and deliver "way ahead" (fixed after Debian 12's 2.9.10:
  // nats-server #6507, #8413); such a consumer is recreated instead of leaving a hole.
  uint64_t SkippedBy(uint64_t first_delivered) const;
  // The stream sequence of the last event this consumer reads (0: none); nullopt for a
  // filter with wildcards (JetStream cannot say). Errors as for JetStream::Connect.
  absl::StatusOr<std::optional<uint64_t>> LastEventToApply() const;
  // Whether the stream is still the one the sink's events came from (see Start); a failure
  // other than UNAVAILABLE (NATS not answering) becomes the Refusal.
  void CheckStream();
  // Makes `why` the Refusal (the first one stays), logged ("log_stream_refused").
  void Refuse(const absl::Status& why);
  // Sets LastError (applier's thread); logs a new error ("log_applier_error"), the same one
  // again after kErrorLogIntervalMs, and the first OK after errors ("log_applier_recovered").
  void SetLastError(const absl::Status& status);
  static constexpr int64_t kLostDeliveryCheckMs = 1000;
  static constexpr int64_t kErrorLogIntervalMs = 10000;
  static constexpr int64_t kSkipCheckTimeoutMs = 2000;

  JetStream* const jetstream_;
  LogSink* const sink_;
  const LogApplierOptions options_;
  // Owned; replaced by Restart on the applier's thread (null while it fails).
  __natsSubscription* subscription_;
  // The generation of the last consumer created (applier's thread only).
  uint64_t generation_;
  // The consumer's delivery number of the last event handled (applier's thread only).
  uint64_t last_delivery_ = 0;
  std::atomic<int> restarts_{0};
  std::atomic<uint64_t> failed_applies_{0};
  std::atomic<uint64_t> set_aside_{0};
  // Failures in a row of the event being applied (applier's thread only): the backoff.
  int consecutive_failures_ = 0;
  // The applied sequence at the last look of Stalled that found the consumer behind.
  std::optional<uint64_t> stalled_at_;
  // The error last logged by SetLastError and when ("": none since the last success).
  std::string logged_error_;
  std::chrono::steady_clock::time_point logged_at_;
  std::atomic<bool> stop_{false};
  mutable absl::Mutex mu_;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  absl::Status refusal_ ABSL_GUARDED_BY(mu_);
  std::string consumer_ ABSL_GUARDED_BY(mu_);  // its name; replaced by Restart
  std::atomic<bool> refused_{false};
  // Held while the listener runs, so that replacing it waits for a call in progress.
  absl::Mutex listener_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::function<void(const absl::Status&)> listener_ ABSL_GUARDED_BY(listener_mu_);
  std::thread thread_;
};

}  // namespace cops

#endif  // COPS_REPLICATION_LOG_APPLIER_H_
