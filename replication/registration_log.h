#ifndef COPS_REPLICATION_REGISTRATION_LOG_H_
#define COPS_REPLICATION_REGISTRATION_LOG_H_

// The writing end of the registration log: publishes registration and unregistration events
// to the JetStream stream. Publish returns only once JetStream has acknowledged the event
// (persisted on a quorum of the stream's replicas); the stream sequence it returns is the
// event's log sequence, the same on every node that applies it (docs/scale-out.md).
//
// Thread-safety: safe for concurrent use; concurrent publishes are ordered by JetStream.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "replication/jetstream.h"
#include "replication/registration_event.h"

namespace cops {

class RegistrationLog {
 public:
  // `jetstream` is not owned and must outlive the log.
  explicit RegistrationLog(JetStream* jetstream) : jetstream_(jetstream) {}

  // The event's log sequence once JetStream has acknowledged it. UNAVAILABLE when no
  // acknowledgement came within publish_timeout_ms: the event may or may not be in the log
  // (a retry may register the document twice in the log; the index then resolves the
  // second as a duplicate of the first).
  absl::StatusOr<uint64_t> Publish(const RegistrationEvent& event);
  // As Publish, to `subject` of the stream (a partition's, replication/partitioning.h).
  absl::StatusOr<uint64_t> PublishTo(const std::string& subject, const RegistrationEvent& event);
  // The stream's name, for messages.
  const std::string& stream() const { return jetstream_->options().stream; }

 private:
  JetStream* const jetstream_;
};

}  // namespace cops

#endif  // COPS_REPLICATION_REGISTRATION_LOG_H_
