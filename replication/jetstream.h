#ifndef COPS_REPLICATION_JETSTREAM_H_
#define COPS_REPLICATION_JETSTREAM_H_

// A connection to a NATS server with its JetStream context, and the registration stream's
// settings. The NATS C client stays behind this header's opaque handles.
//
// Thread-safety: a JetStream may be used from many threads (the NATS client is thread-safe);
// it must outlive every RegistrationLog and LogApplier made from it.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct __natsConnection;  // NOLINT(bugprone-reserved-identifier): libnats names its types so
struct __jsCtx;  // NOLINT(bugprone-reserved-identifier): libnats names its types so

namespace cops {

struct RegistrationStreamOptions {
  std::string url = "nats://127.0.0.1:4222";  // one or more comma-separated server URLs
  std::string stream = "COPS_REGISTRATIONS";  // JetStream stream name
  // The stream's subject for a single partition; partition p publishes to "<subject>.<p>"
  // (replication/partitioning.h). The stream takes both.
  std::string subject = "cops.registrations";
  // Copies JetStream keeps of each event (RAFT quorum); 1 for a single server, 3 in a
  // cluster of 3. Applied when the stream is created; an existing stream keeps its own.
  int replicas = 1;
  // Look the stream up and create it when missing; false connects only (a tool reading the
  // cluster map must not create the log with its own settings).
  bool create_stream = true;
  // How long a publish waits for JetStream's acknowledgement, in milliseconds.
  int64_t publish_timeout_ms = 5000;
};

class JetStream {
 public:
  // Connects to options.url and (with create_stream) creates the stream (file storage,
  // `replicas` copies, limits retention: events are kept) when it does not exist. UNAVAILABLE when no server
  // answers; INTERNAL on other client errors, with the client's text.
  static absl::StatusOr<std::unique_ptr<JetStream>> Connect(
      const RegistrationStreamOptions& options);
  ~JetStream();
  JetStream(const JetStream&) = delete;
  JetStream& operator=(const JetStream&) = delete;

  const RegistrationStreamOptions& options() const { return options_; }
  __natsConnection* connection() const { return connection_; }
  __jsCtx* context() const { return context_; }

 private:
  JetStream(RegistrationStreamOptions options, __natsConnection* connection, __jsCtx* context);
  const RegistrationStreamOptions options_;
  __natsConnection* const connection_;  // owned
  __jsCtx* const context_;              // owned
};

// The status for a NATS client status code: UNAVAILABLE for connection trouble and
// timeouts, INTERNAL otherwise; `what` says what was being done.
absl::Status NatsError(int nats_status, const std::string& what);

}  // namespace cops

#endif  // COPS_REPLICATION_JETSTREAM_H_
