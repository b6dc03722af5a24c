#include "replication/partitioning.h"

namespace cops {

uint32_t PartitionOf(const std::array<uint8_t, 32>& sha256, uint32_t partitions) {
  uint64_t prefix = 0;
  for (int i = 0; i < 8; ++i) prefix = (prefix << 8) | sha256[i];
  return static_cast<uint32_t>(prefix % partitions);
}

std::string PartitionSubject(const std::string& base_subject, uint32_t partition) {
  return base_subject + "." + std::to_string(partition);
}

}  // namespace cops
