#ifndef COPS_REPLICATION_LOG_ROLE_H_
#define COPS_REPLICATION_LOG_ROLE_H_

// A node's place in the registration log (docs/scale-out.md): copsd --log (the primary:
// writes go through the log) or --follow (a read-only replica kept current from it). The
// connection, the replica that applies events to the index, the log's applier and the
// DocumentWrites the service writes through. copsd's flags become LogRoleOptions in
// server/main.cc.
//
// Thread-safety: StartLogRole is called once at start-up; the members are thread-safe as
// their own headers say.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/document_writes.h"
#include "engine/index_generations.h"
#include "replication/jetstream.h"
#include "replication/log_applier.h"
#include "replication/log_replica.h"
#include "replication/registration_log.h"

namespace cops {

struct LogRoleOptions {
  // The log's NATS connection and stream; an empty url: no log role (a single node).
  RegistrationStreamOptions stream;
  bool primary = false;  // --log: writes are published and awaited; else --follow: refused
  // --follow: where writes go, named in the refusal (empty: the log's URL).
  std::string primary_address;
  // The partitions of the cluster (--partitions; 0: the single-partition log). With P > 0
  // ids come from the log sequence, and the node consumes the subject of `partition`
  // (nullopt: every partition's, a gateway).
  uint32_t partitions = 0;
  std::optional<uint32_t> partition;
  // The prefix of this node's consumers' names (LogApplierOptions::durable); empty:
  // DefaultConsumerName(data_dir).
  std::string consumer;
  std::string data_dir;
};

// Members are destroyed in reverse order: the applier stops before the log connection
// closes. All null in single-node mode.
struct LogRole {
  std::unique_ptr<JetStream> jetstream;
  std::unique_ptr<LogReplica> replica;
  std::unique_ptr<RegistrationLog> log;
  std::unique_ptr<DocumentWrites> writes;
  std::unique_ptr<LogApplier> applier;
  std::unique_ptr<LogPosition> position;
};

// Connects, checks that the index follows the log (LogReplica::CheckIndexFollowsLog) and
// starts applying; an empty LogRole when options.stream.url is empty (never touches NATS).
// Errors as JetStream::Connect and LogApplier::Start. `generations` must outlive the role.
absl::StatusOr<LogRole> StartLogRole(const LogRoleOptions& options,
                                     IndexGenerations* generations);

// The prefix of a node's consumers' names when none is given: stable for one data directory
// on one host, distinct between them (FNV-1a of both).
std::string DefaultConsumerName(const std::string& data_dir);

}  // namespace cops

#endif  // COPS_REPLICATION_LOG_ROLE_H_
