#ifndef COPS_REPLICATION_PARTITIONING_H_
#define COPS_REPLICATION_PARTITIONING_H_

// How registered documents are split over the partitions of a scale-out cluster
// (docs/scale-out.md, "Partitions"). A document belongs to one partition, chosen from the
// SHA-256 of its canonical text (DocumentRecord::sha256): the same text always meets the
// same partition, so a duplicate is found as on a single node. Each partition's events go to
// their own subject of the registration stream, which that partition's index replicas
// consume through a filtered durable consumer.
//
// Thread-safety: plain functions.

#include <array>
#include <cstdint>
#include <string>

namespace cops {

// The partition (0..partitions-1) of a document whose canonical text has digest `sha256`:
// its first 8 bytes, big-endian, modulo `partitions`. REQUIRES: partitions >= 1.
uint32_t PartitionOf(const std::array<uint8_t, 32>& sha256, uint32_t partitions);

// The subject of partition `partition` under the stream's base subject: "<base>.<partition>",
// e.g. "cops.registrations.1".
std::string PartitionSubject(const std::string& base_subject, uint32_t partition);

}  // namespace cops

#endif  // COPS_REPLICATION_PARTITIONING_H_
