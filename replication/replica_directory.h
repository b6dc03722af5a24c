#ifndef COPS_REPLICATION_REPLICA_DIRECTORY_H_
#define COPS_REPLICATION_REPLICA_DIRECTORY_H_

// Where the index replicas of each partition are, for a router fanning a check out
// (docs/scale-out.md). A partition is a share of the registered documents; each has one or
// more index replicas, copsd nodes that consume that partition's events from the
// registration log. Implementations: a fixed list given on the command line, and the cluster
// map kept in a JetStream key-value bucket with heartbeats.
//
// Thread-safety: implementations are safe to call from many threads.

#include <cstdint>
#include <string>
#include <vector>

namespace cops {

struct ReplicaInfo {
  std::string node_id;  // stable name of the copsd node (unique in the cluster)
  std::string address;  // its gRPC listener, "HOST:PORT"
  // The highest log sequence the node has applied for this partition (0 when unknown).
  uint64_t applied_sequence = 0;
};

class ReplicaDirectory {
 public:
  virtual ~ReplicaDirectory() = default;

  // The number of partitions P of the cluster; partitions are numbered 0..P-1.
  virtual uint32_t partitions() const = 0;

  // The replicas of `partition` believed alive now (heartbeat within its lease), best first
  // (most advanced applied sequence first). Empty when none is alive: a check must then be
  // answered as partial, naming the partition, never as a silent "no violation".
  virtual std::vector<ReplicaInfo> LiveReplicas(uint32_t partition) const = 0;
};

}  // namespace cops

#endif  // COPS_REPLICATION_REPLICA_DIRECTORY_H_
