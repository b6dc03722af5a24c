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

// How a copsd proves itself to NATS and checks the servers (docs/scale-out.md, "NATS's own
// security"). Empty fields are unused; nats-server's accounts then decide what the
// connection may publish and subscribe to.
struct NatsSecurity {
  std::string user;        // with password: natsOptions_SetUserInfo
  std::string password;
  std::string creds_file;  // a .creds file (user JWT and NKey seed)
  std::string nkey;        // a user's public NKey ("U...") with the file of its seed
  std::string nkey_seed_file;
  std::string tls_ca;      // TLS to the servers, trusting this CA bundle (PEM)
  std::string tls_cert;    // client certificate and key (PEM) when the servers verify clients
  std::string tls_key;
};

struct RegistrationStreamOptions {
  std::string url = "nats://127.0.0.1:4222";  // one or more comma-separated server URLs
  NatsSecurity security;
  std::string stream = "COPS_REGISTRATIONS";  // JetStream stream name
  // The stream's subject for a single partition; partition p publishes to "<subject>.<p>"
  // (replication/partitioning.h). The stream takes both.
  std::string subject = "cops.registrations";
  // Copies JetStream keeps of each event (RAFT quorum); 1 for a single server, 3 in a
  // cluster of 3. Applied when the stream is created; an existing stream keeping fewer is
  // refused (FAILED_PRECONDITION): an event acknowledged by one server is lost with its disk.
  int replicas = 1;
  // Look the stream up (checking its replicas) and create it when missing; false connects
  // only (a tool reading the cluster map must not create the log with its own settings).
  bool create_stream = true;
  // With create_stream: false leaves a missing stream missing. A node that has applied
  // events from the stream must never create it anew (its sequences would start again at
  // 1): LogApplier::Start then refuses the missing stream, naming what the node applied.
  bool create_if_missing = true;
  // How long a publish waits for JetStream's acknowledgement, in milliseconds.
  int64_t publish_timeout_ms = 5000;
  // The cluster key (replication/cluster_signature.h; raw bytes, copsd --cluster-key-file):
  // when set, every event published is signed with it and every event applied must carry
  // its signature (an unsigned or badly signed one is set aside). Empty: events are neither
  // signed nor checked.
  std::string signing_key;
};

class JetStream {
 public:
  // Connects to options.url with options.security and (with create_stream) creates the
  // stream (file storage, `replicas` copies, limits retention: events are kept) when it does
  // not exist. UNAVAILABLE when no server answers; INVALID_ARGUMENT for security options
  // that go together given apart; INTERNAL on other client errors (refused credentials,
  // unreadable files), with the client's text.
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
