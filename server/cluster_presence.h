#ifndef COPS_SERVER_CLUSTER_PRESENCE_H_
#define COPS_SERVER_CLUSTER_PRESENCE_H_

// copsd's side of the cluster map (docs/scale-out.md, "The cluster map"): with
// --cluster-node-id, a --log or --follow node joins the map once it serves and leaves it
// when it shuts down; `copsd --show-cluster NATS_URL` prints the map.
//
// Thread-safety: ClusterPresence may be used from any thread (the metrics scrape reads its
// health while the signal thread makes it leave).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "replication/cluster_map.h"
#include "replication/jetstream.h"
#include "server/server_config.h"

namespace cops {

class ClusterPresence {
 public:
  // Joins the map as config.cluster_node_id at config.advertise (else `bound`, the
  // listener's HOST:PORT), serving partition config.partition of config.partitions (a node
  // holding every document, unpartitioned or a gateway of all partitions, is partition 0 of
  // 1: a router of P > 1 partitions never picks it), heartbeating every config.heartbeat_ms with
  // `applied` (this node's applied log sequence). The bucket gets config.log_replicas copies when
  // this node creates it. Errors as ClusterMember::Start. `jetstream` must outlive this object.
  absl::Status Join(const ServerConfig& config, JetStream* jetstream,
                    std::function<uint64_t()> applied, const std::string& bound);
  // Deletes this node's record (routers drop it at once) and stops heartbeating; a failure
  // is logged (the record then expires with its lease). Nothing when not joined.
  void Leave();
  // The heartbeats so far; nullopt when not joined.
  std::optional<ClusterMemberHealth> Health() const;

 private:
  mutable absl::Mutex mu_;
  std::unique_ptr<ClusterMember> member_ ABSL_GUARDED_BY(mu_);
};

// The cluster map at `jetstream` as copsd --route reads it: bucket config.cluster_bucket
// (created with config.log_replicas copies when absent), config.partitions partitions, a
// lease of 3 heartbeat intervals (config.heartbeat_ms: the members' own). Errors as
// ClusterMap::Start.
absl::StatusOr<std::unique_ptr<ClusterMap>> StartClusterMap(const ServerConfig& config,
                                                            JetStream* jetstream);

// Prints every member of the cluster map at config.show_cluster_url (bucket
// config.cluster_bucket), one line each, by node id:
//   NODE_ID ADDRESS PARTITION/PARTITIONS APPLIED_SEQUENCE HEARD_SECONDS_AGO live|expired
// A member is live when heard within 3 heartbeat intervals (config.heartbeat_ms). NOT_FOUND
// when there is no such bucket; UNAVAILABLE when NATS does not answer.
absl::Status PrintClusterMap(const ServerConfig& config, std::ostream& out);

}  // namespace cops

#endif  // COPS_SERVER_CLUSTER_PRESENCE_H_
