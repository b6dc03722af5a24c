#ifndef COPS_REPLICATION_CLUSTER_MAP_H_
#define COPS_REPLICATION_CLUSTER_MAP_H_

// The cluster map (docs/scale-out.md, "The cluster map"): which copsd index nodes exist,
// where they listen, which partition each serves and how far it has applied the log. It
// lives in a JetStream key-value bucket; each index node runs a ClusterMember that writes
// its record under `members.<node_id>` every heartbeat interval and deletes it when it shuts
// down cleanly; a router runs a ClusterMap that watches the bucket and answers, as a
// ReplicaDirectory, which replicas of a partition are live: those whose last record is
// younger than the lease.
//
// "Last heard" is when the observer received the member's latest record, on its own clock;
// for records already in the bucket when the watch starts, when the NATS server stored them
// (its JetStream timestamp), so that a node that died before the observer started is not
// taken for live. Only there must clocks agree, to well within a lease.
//
// Thread-safety: MemberTable, ClusterMember and ClusterMap are safe to call from many
// threads; Start/Stop/Leave from one.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "replication/jetstream.h"
#include "replication/replica_directory.h"

struct __kvStore;  // NOLINT(bugprone-reserved-identifier): libnats names its types so

namespace cops {

// One node's entry in the cluster map. Encoded as a small JSON object with a version field
// "v" (EncodeMemberRecord); readers skip records of another version.
struct MemberRecord {
  static constexpr int kVersion = 1;  // in the bucket: change only with a new reader
  std::string node_id;                // [A-Za-z0-9_-]{1,64}, unique in the cluster
  std::string address;                // the node's gRPC listener, "HOST:PORT"
  uint32_t partition = 0;             // the partition it serves, < partitions
  uint32_t partitions = 1;            // P as this node is configured
  uint64_t applied_sequence = 0;      // the highest log sequence it has applied
  int64_t time_unix_micros = 0;       // the node's clock when it wrote the record

  bool operator==(const MemberRecord&) const = default;
};

std::string EncodeMemberRecord(const MemberRecord& record);
// INVALID_ARGUMENT for bytes that are not a record; UNIMPLEMENTED for another version.
absl::StatusOr<MemberRecord> DecodeMemberRecord(std::string_view bytes);
// The record `bytes` (EncodeMemberRecord's) with its "sig" field: ClusterSignature of the
// record under its key in the bucket (`kv_key`, "members.<node id>").
std::string SignMemberRecord(std::string_view bytes, std::string_view key,
                             std::string_view kv_key);
// OK when `bytes` carries the "sig" SignMemberRecord gives it under `kv_key`; DATA_LOSS
// (unsigned, bad signature, not JSON) otherwise.
absl::Status VerifyMemberRecord(std::string_view bytes, std::string_view key,
                                std::string_view kv_key);
// INVALID_ARGUMENT unless `node_id` matches [A-Za-z0-9_-]{1,64} (one token of a key).
absl::Status ValidateNodeId(std::string_view node_id);
// The record's key in the bucket: "members.<node_id>".
std::string MemberKey(std::string_view node_id);

// The bucket holding the map.
struct ClusterBucketOptions {
  std::string bucket = "COPS_CLUSTER";
  // Copies JetStream keeps (RAFT quorum) when this process creates the bucket: 1 on a single
  // server, 3 in a cluster of 3. An existing bucket keeps its own.
  int replicas = 1;
  // When the bucket is created: how long JetStream keeps a record nobody rewrites (a node
  // that died without deleting its own). Longer than any lease; it only trims the bucket.
  absl::Duration record_max_age = absl::Hours(1);
  // Create the bucket when it does not exist; else NOT_FOUND.
  bool create = true;
  // The cluster key (replication/cluster_signature.h): when set, members sign their records
  // and the map ignores (counts as unreadable) a record without this key's signature, so a
  // forged member is never chosen. Empty: records are neither signed nor checked.
  std::string signing_key;
  // How long Start retries while JetStream is UNAVAILABLE (a replicated bucket answers only
  // once its RAFT group has a leader, seconds after NATS servers restart).
  absl::Duration start_timeout = absl::Seconds(30);
};

// A member as an observer sees it.
struct MemberStatus {
  MemberRecord record;
  absl::Time heard;   // when its last record was received (stored, if replayed)
  bool live = false;  // heard within the lease
};

struct ClusterMapHealth {
  uint32_t members = 0;       // records in the map, live or not
  uint32_t live_members = 0;  // heard within the lease
  // Partitions 0..P-1 with no live replica: a check now gets a partial answer.
  uint32_t partitions_without_replica = 0;
  uint64_t unreadable_records = 0;  // records skipped (another version, bad bytes), so far
};

// The members an observer knows of, with their liveness: the in-memory side of ClusterMap,
// fed by its watcher (tests feed it directly). A record whose `partitions` differs from
// partitions() is never live: that node is configured for another layout and serves another
// share of the documents.
class MemberTable : public ReplicaDirectory {
 public:
  // `partitions`: P when configured (> 0); 0 takes the largest P any record states (1 when
  // there is none). `clock` is the observer's wall clock.
  MemberTable(uint32_t partitions, absl::Duration lease, std::function<absl::Time()> clock);

  // The latest record of a member, heard at `heard` (clamped to the clock's now: pass
  // absl::InfiniteFuture() for "now").
  void Put(const MemberRecord& record, absl::Time heard);
  // The member left (its record was deleted).
  void Remove(const std::string& node_id);
  void CountUnreadable();

  uint32_t partitions() const override;
  std::vector<ReplicaInfo> LiveReplicas(uint32_t partition) const override;
  // Every member, by node id.
  std::vector<MemberStatus> Members() const;
  ClusterMapHealth Health() const;

 private:
  uint32_t PartitionsLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool LiveLocked(const MemberStatus& member, absl::Time now, uint32_t partitions) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const uint32_t configured_partitions_;
  const absl::Duration lease_;
  const std::function<absl::Time()> clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, MemberStatus> members_ ABSL_GUARDED_BY(mu_);
  uint64_t unreadable_ ABSL_GUARDED_BY(mu_) = 0;
};

struct ClusterMemberOptions {
  ClusterBucketOptions bucket;
  MemberRecord record;  // node_id, address, partition, partitions; the rest is filled in
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // This node's applied log sequence, read at each heartbeat (null: 0).
  std::function<uint64_t()> applied_sequence;
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

struct ClusterMemberHealth {
  uint64_t heartbeats = 0;         // records written
  uint64_t failed_heartbeats = 0;  // writes that failed (NATS down, no JetStream quorum)
  absl::Time last_heartbeat = absl::InfinitePast();  // when the last write succeeded
};

// A node's presence in the cluster map: writes its record now and every heartbeat interval
// on a background thread, until Stop or Leave. A failed write is retried at the next beat.
class ClusterMember {
 public:
  // Binds (or creates) the bucket, writes the first record and starts heartbeating.
  // INVALID_ARGUMENT for a bad node id; UNAVAILABLE (after retrying for
  // options.bucket.start_timeout) or INTERNAL as JetStream::Connect when the bucket cannot
  // be bound or the first record not written. `jetstream` must outlive it.
  static absl::StatusOr<std::unique_ptr<ClusterMember>> Start(JetStream* jetstream,
                                                              ClusterMemberOptions options);
  // Stops heartbeating and leaves the record as it is: like a crash, the member ceases to be
  // live when its lease runs out. Call Leave() first at a clean shutdown.
  ~ClusterMember();
  ClusterMember(const ClusterMember&) = delete;
  ClusterMember& operator=(const ClusterMember&) = delete;

  // Stops heartbeating (the record stays until its lease runs out).
  void Stop();
  // Stops heartbeating and deletes the record: observers drop the member at once.
  absl::Status Leave();

  ClusterMemberHealth Health() const;
  absl::Status LastError() const;

 private:
  ClusterMember(__kvStore* kv, ClusterMemberOptions options);
  absl::Status Beat();
  void Run();

  __kvStore* const kv_;  // owned
  const ClusterMemberOptions options_;
  const std::string key_;
  absl::Notification stop_;
  mutable absl::Mutex mu_;
  ClusterMemberHealth health_ ABSL_GUARDED_BY(mu_);
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

struct ClusterMapOptions {
  ClusterBucketOptions bucket;
  // P when configured (> 0); 0 takes it from the records (MemberTable).
  uint32_t partitions = 0;
  // A member is live while its last record is younger than this: 3 heartbeat intervals
  // tolerate two lost beats. Shorter notices a dead node sooner; longer rides out NATS
  // leader elections (a few seconds) without declaring replicas dead.
  absl::Duration lease = absl::Seconds(3);
  std::function<absl::Time()> clock = [] { return absl::Now(); };
  // How long Start waits for the bucket's current records before returning.
  absl::Duration initial_wait = absl::Seconds(5);
};

// The cluster map as a router sees it: watches the bucket on a background thread and keeps
// the latest record of every member in a MemberTable. When the watch fails (NATS down) or
// is silent for half a lease (a stalled watch: live members write every interval), it is set
// up again, replaying every member's latest record. While no record arrives, members cease
// to be live after their lease, so a router cut off from NATS answers partial rather than
// trusting stale health.
class ClusterMap : public ReplicaDirectory {
 public:
  // Binds (or creates, per options.bucket.create) the bucket, reads its current records and
  // starts watching. Errors as ClusterMember::Start. `jetstream` must outlive it.
  static absl::StatusOr<std::unique_ptr<ClusterMap>> Start(JetStream* jetstream,
                                                           ClusterMapOptions options);
  ~ClusterMap();  // stops watching
  ClusterMap(const ClusterMap&) = delete;
  ClusterMap& operator=(const ClusterMap&) = delete;

  uint32_t partitions() const override { return table_.partitions(); }
  std::vector<ReplicaInfo> LiveReplicas(uint32_t partition) const override {
    return table_.LiveReplicas(partition);
  }
  std::vector<MemberStatus> Members() const { return table_.Members(); }
  ClusterMapHealth Health() const { return table_.Health(); }
  // The last failure of the watch (OK while it works).
  absl::Status LastError() const;

 private:
  ClusterMap(__kvStore* kv, ClusterMapOptions options);
  void Run();
  // Watches until stopped or the watch fails; returns the failure.
  absl::Status WatchOnce();
  // Applies one entry of the watch; `replayed`: it was in the bucket when the watch began.
  void Handle(void* entry, bool replayed);

  __kvStore* const kv_;  // owned
  const ClusterMapOptions options_;
  MemberTable table_;
  std::atomic<bool> stop_{false};
  absl::Notification initial_state_;
  mutable absl::Mutex mu_;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace cops

#endif  // COPS_REPLICATION_CLUSTER_MAP_H_
