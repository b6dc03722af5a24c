#include "replication/log_role.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "core/status_macros.h"
#include "logging/log_event.h"
#include "replication/partitioning.h"

namespace cops {

std::string DefaultConsumerName(const std::string& data_dir) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::error_code ec;
  const std::string key =
      std::string(host) + ":" + std::filesystem::absolute(data_dir, ec).string();
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  char name[32];
  std::snprintf(name, sizeof(name), "copsd-%016llx", static_cast<unsigned long long>(h));
  return name;
}

absl::StatusOr<LogRole> StartLogRole(const LogRoleOptions& options,
                                     IndexGenerations* generations) {
  LogRole role;
  RegistrationStreamOptions stream = options.stream;
  if (stream.url.empty()) return role;
  const bool partitioned = options.partitions > 0;
  role.replica = std::make_unique<LogReplica>(generations,
                                              /*ids_from_log_sequence=*/partitioned);
  COPS_RETURN_IF_ERROR(role.replica->CheckIndexFollowsLog());
  // A node that applied events from the stream never creates it anew: the applier refuses
  // the missing stream instead (replication/log_applier.h).
  COPS_ASSIGN_OR_RETURN(const std::string stream_identity, role.replica->LogStreamIdentity());
  stream.create_if_missing = role.replica->AppliedLogSequence() == 0 && stream_identity.empty();
  COPS_ASSIGN_OR_RETURN(role.jetstream, JetStream::Connect(stream));
  if (options.primary) {
    role.log = std::make_unique<RegistrationLog>(role.jetstream.get());
    role.writes = std::make_unique<LoggedWrites>(role.log.get(), role.replica.get(),
                                                 std::chrono::seconds(30));
  } else {
    role.writes = std::make_unique<ReadOnlyWrites>(
        options.primary_address.empty() ? "the copsd started with --log " + stream.url
                                        : options.primary_address);
  }
  LogApplierOptions applier;
  applier.durable =
      options.consumer.empty() ? DefaultConsumerName(options.data_dir) : options.consumer;
  // A partition's replica consumes its partition's subject; a gateway every partition's.
  if (partitioned) {
    applier.filter_subject = options.partition.has_value()
                                 ? PartitionSubject(stream.subject, *options.partition)
                                 : stream.subject + ".*";
  }
  COPS_ASSIGN_OR_RETURN(role.applier,
                        LogApplier::Start(role.jetstream.get(), role.replica.get(), applier));
  role.position = std::make_unique<ReplicaPosition>(role.replica.get(), role.applier.get());
  LogEvent(
      LogLevel::kInfo, options.primary ? "registration_log" : "following_log",
      {{"url", stream.url},
       {"stream", stream.stream},
       {"partitions", std::to_string(options.partitions)},
       {"partition",
        partitioned && options.partition.has_value() ? std::to_string(*options.partition) : "all"},
       {"consumer", role.applier->ConsumerName()},
       {"applied_sequence", std::to_string(role.replica->AppliedLogSequence())}});
  return role;
}

}  // namespace cops
