#include "replication/static_replica_directory.h"

#include <charconv>
#include <set>

namespace cops {

absl::StatusOr<StaticReplicaDirectory> StaticReplicaDirectory::Parse(
    const std::vector<std::string>& specs, uint32_t partitions) {
  if (partitions == 0) return absl::InvalidArgumentError("a cluster has at least 1 partition");
  StaticReplicaDirectory directory(partitions);
  std::set<std::string> seen;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    uint32_t partition = 0;
    const char* end = spec.data() + (eq == std::string::npos ? 0 : eq);
    const auto [ptr, ec] = std::from_chars(spec.data(), end, partition);
    const std::string address = eq == std::string::npos ? "" : spec.substr(eq + 1);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || ptr != end ||
        address.find(':') == std::string::npos) {
      return absl::InvalidArgumentError("replica '" + spec +
                                        "' is not PARTITION=HOST:PORT (e.g. 0=10.0.0.5:7411)");
    }
    if (partition >= partitions) {
      return absl::InvalidArgumentError("replica '" + spec + "' names partition " +
                                        std::to_string(partition) + " of a cluster of " +
                                        std::to_string(partitions) + " partitions");
    }
    if (!seen.insert(address).second) {
      return absl::InvalidArgumentError("replica address " + address + " is listed twice");
    }
    directory.replicas_[partition].push_back(ReplicaInfo{.node_id = address, .address = address});
  }
  return directory;
}

std::vector<ReplicaInfo> StaticReplicaDirectory::LiveReplicas(uint32_t partition) const {
  if (partition >= replicas_.size()) return {};
  return replicas_[partition];
}

}  // namespace cops
