#ifndef COPS_REPLICATION_CLUSTER_SIGNATURE_H_
#define COPS_REPLICATION_CLUSTER_SIGNATURE_H_

// What the cluster writes into NATS is signed with the cluster key, and what a node reads is
// verified before it is believed (docs/scale-out.md, "Signed events and records"): each
// registration event (NATS header Cops-Signature) and each cluster-map record (its "sig"
// field). The signature is HMAC-SHA256 with the key of `context` (the event's subject, the
// record's key: an event cannot be replayed into another partition, nor a record under
// another member's name), a NUL byte and the bytes.
//
// Why HMAC-SHA256 with one cluster key rather than Ed25519 with a key per node: every node
// both reads and (router, primary, members) writes, so a symmetric key is one secret file
// to deploy and ~1 us per event, against a key directory and an asymmetric verification
// of every event on every node. What it stops: anyone who reaches NATS without the key (a
// leaked NATS password, a misconfigured account). What it does not: a node holding the key
// could forge as any other; NATS's per-user permissions (which subjects each node may
// publish) are the defence there, and per-node Ed25519 keys the step beyond.
//
// Thread-safety: free functions without shared state.

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cops {

inline constexpr char kEventSignatureHeader[] = "Cops-Signature";

// The cluster key from `path`: at least 32 bytes as hex (64+ hex digits, whitespace around
// ignored). NOT_FOUND when unreadable; INVALID_ARGUMENT naming the file otherwise.
absl::StatusOr<std::string> ReadClusterKey(const std::string& path);

// The signature of `bytes` written under `context` with `key`, as 64 lowercase hex digits.
std::string ClusterSignature(std::string_view key, std::string_view context,
                             std::string_view bytes);

// OK when `signature` is ClusterSignature(key, context, bytes) (compared in constant time);
// DATA_LOSS saying "unsigned" or "bad signature" otherwise: no node can ever believe it.
absl::Status VerifyClusterSignature(std::string_view key, std::string_view context,
                                    std::string_view bytes, std::string_view signature);

}  // namespace cops

#endif  // COPS_REPLICATION_CLUSTER_SIGNATURE_H_
