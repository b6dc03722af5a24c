#ifndef COPS_REPLICATION_CLUSTER_PRESENCE_H_
#define COPS_REPLICATION_CLUSTER_PRESENCE_H_

// A node's side of the cluster map (docs/scale-out.md, "The cluster map"): with
// --cluster-node-id, a copsd --log or --follow joins the map once it serves and leaves it
// when it shuts down; `copsd --show-cluster NATS_URL` prints the map. copsd's flags become
// these options in server/server_config.h.
//
// Thread-safety: ClusterPresence may be used from any thread (the metrics scrape reads its
// health while the signal thread makes it leave).

#include <memory>
#include <optional>
#include <ostream>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "replication/cluster_map.h"
#include "replication/jetstream.h"

namespace cops {

// A member's lease in heartbeat intervals: two lost beats are tolerated.
inline constexpr int kClusterLeaseIntervals = 3;

class ClusterPresence {
 public:
  // Joins the map with `options` (ClusterMember::Start): its record, heartbeat interval and
  // applied sequence. Errors as ClusterMember::Start. `jetstream` must outlive this object.
  absl::Status Join(JetStream* jetstream, ClusterMemberOptions options);
  // Deletes this node's record (routers drop it at once) and stops heartbeating; a failure
  // is logged (the record then expires with its lease). Nothing when not joined.
  void Leave();
  // The heartbeats so far; nullopt when not joined.
  std::optional<ClusterMemberHealth> Health() const;

 private:
  mutable absl::Mutex mu_;
  std::unique_ptr<ClusterMember> member_ ABSL_GUARDED_BY(mu_);
};

// Prints every member of the cluster map `map` (its bucket is never created) reached over
// `connection` (no stream is created), one line each, by node id:
//   NODE_ID ADDRESS PARTITION/PARTITIONS APPLIED_SEQUENCE HEARD_SECONDS_AGO live|expired
// A member is live when heard within its lease. NOT_FOUND when there is no such bucket;
// UNAVAILABLE when NATS does not answer.
absl::Status PrintClusterMap(RegistrationStreamOptions connection, ClusterMapOptions map,
                             std::ostream& out);

}  // namespace cops

#endif  // COPS_REPLICATION_CLUSTER_PRESENCE_H_
