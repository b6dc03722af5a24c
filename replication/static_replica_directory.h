#ifndef COPS_REPLICATION_STATIC_REPLICA_DIRECTORY_H_
#define COPS_REPLICATION_STATIC_REPLICA_DIRECTORY_H_

// A ReplicaDirectory from a fixed list (copsd --route ... --replica P=HOST:PORT, repeated;
// docs/scale-out.md). It knows no health of its own: every listed replica is "live", in the
// order given, and the router skips one whose last call failed (server/router.h). The
// cluster map in a JetStream key-value bucket is the directory that follows members
// as they come and go.
//
// Thread-safety: immutable after construction.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "replication/replica_directory.h"

namespace cops {

class StaticReplicaDirectory : public ReplicaDirectory {
 public:
  // `specs` are "P=HOST:PORT" with 0 <= P < partitions, each address once. INVALID_ARGUMENT
  // on a malformed spec, a partition out of range, a repeated address or partitions == 0.
  // A partition with no replica is allowed (its checks are answered as partial).
  static absl::StatusOr<StaticReplicaDirectory> Parse(const std::vector<std::string>& specs,
                                                      uint32_t partitions);

  uint32_t partitions() const override { return static_cast<uint32_t>(replicas_.size()); }
  std::vector<ReplicaInfo> LiveReplicas(uint32_t partition) const override;

 private:
  explicit StaticReplicaDirectory(uint32_t partitions) : replicas_(partitions) {}
  std::vector<std::vector<ReplicaInfo>> replicas_;  // by partition
};

}  // namespace cops

#endif  // COPS_REPLICATION_STATIC_REPLICA_DIRECTORY_H_
