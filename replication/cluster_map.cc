#include "replication/cluster_map.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "nlohmann/json.hpp"
#include "logging/log_event.h"
#include "replication/cluster_signature.h"

namespace cops {
namespace {

constexpr char kMembersPrefix[] = "members.";
constexpr int64_t kWatchPollMs = 100;  // bounds how long Stop waits for the watch thread

// Unsigned field `name` of `j`, or nullopt when absent or of another type.
std::optional<uint64_t> UnsignedField(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

std::optional<std::string> StringField(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// Binds the bucket, creating it when allowed and absent (two creators may race: the loser
// binds the winner's).
absl::StatusOr<kvStore*> OpenBucketOnce(JetStream* js, const ClusterBucketOptions& options) {
  kvStore* kv = nullptr;
  natsStatus s = js_KeyValue(&kv, js->context(), options.bucket.c_str());
  if (s == NATS_OK) return kv;
  if (s != NATS_NOT_FOUND) return NatsError(s, "binding key-value bucket " + options.bucket);
  if (!options.create) return absl::NotFoundError("no key-value bucket " + options.bucket);
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description = "COPS cluster map (docs/scale-out.md)";
  config.History = 1;
  config.StorageType = js_FileStorage;
  config.Replicas = options.replicas;
  config.TTL = absl::ToInt64Nanoseconds(options.record_max_age);
  s = js_CreateKeyValue(&kv, js->context(), &config);
  if (s == NATS_OK) return kv;
  const std::string detail = nats_GetLastError(nullptr);
  if (js_KeyValue(&kv, js->context(), options.bucket.c_str()) == NATS_OK) return kv;
  return NatsError(s, "creating key-value bucket " + options.bucket + " (" + detail + ")");
}

const absl::Status& StatusOf(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& result) {
  return result.status();
}

// Calls `attempt` until it succeeds, fails other than UNAVAILABLE, or `timeout` has passed:
// right after NATS servers restart, a replicated bucket answers only once its RAFT group
// has elected a leader, some seconds later.
template <typename T>
T RetryWhileUnavailable(absl::Duration timeout, const std::function<T()>& attempt) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    T result = attempt();
    if (result.ok() || !absl::IsUnavailable(StatusOf(result)) || absl::Now() > deadline) {
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

absl::StatusOr<kvStore*> OpenBucket(JetStream* js, const ClusterBucketOptions& options) {
  return RetryWhileUnavailable<absl::StatusOr<kvStore*>>(
      options.start_timeout, [&] { return OpenBucketOnce(js, options); });
}

}  // namespace

std::string SignMemberRecord(std::string_view bytes, std::string_view key,
                             std::string_view kv_key) {
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::string(bytes);
  j["sig"] = ClusterSignature(key, kv_key, j.dump());
  return j.dump();
}

absl::Status VerifyMemberRecord(std::string_view bytes, std::string_view key,
                                std::string_view kv_key) {
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError(std::string(kv_key) + ": not a JSON object");
  }
  std::string signature;
  if (auto it = j.find("sig"); it != j.end() && it->is_string()) signature = it->get<std::string>();
  j.erase("sig");
  // nlohmann's objects are ordered maps: the dump without "sig" is the bytes signed.
  return VerifyClusterSignature(key, kv_key, j.dump(), signature);
}

std::string EncodeMemberRecord(const MemberRecord& record) {
  nlohmann::json j = {{"v", MemberRecord::kVersion},       {"node", record.node_id},
                      {"address", record.address},         {"partition", record.partition},
                      {"partitions", record.partitions},   {"applied", record.applied_sequence},
                      {"time_us", record.time_unix_micros}};
  return j.dump();
}

absl::StatusOr<MemberRecord> DecodeMemberRecord(std::string_view bytes) {
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("member record is not a JSON object");
  }
  const std::optional<uint64_t> version = UnsignedField(j, "v");
  if (!version) return absl::InvalidArgumentError("member record without a version");
  if (*version != MemberRecord::kVersion) {
    return absl::UnimplementedError("member record version " + std::to_string(*version));
  }
  MemberRecord record;
  std::optional<std::string> node = StringField(j, "node");
  std::optional<std::string> address = StringField(j, "address");
  std::optional<uint64_t> partition = UnsignedField(j, "partition");
  std::optional<uint64_t> partitions = UnsignedField(j, "partitions");
  std::optional<uint64_t> applied = UnsignedField(j, "applied");
  auto time = j.find("time_us");
  if (!node || !address || !partition || !partitions || !applied || time == j.end() ||
      !time->is_number_integer() || *partitions == 0 || *partitions > UINT32_MAX ||
      *partition >= *partitions) {
    return absl::InvalidArgumentError("member record with a missing or bad field");
  }
  record.node_id = std::move(*node);
  record.address = std::move(*address);
  record.partition = static_cast<uint32_t>(*partition);
  record.partitions = static_cast<uint32_t>(*partitions);
  record.applied_sequence = *applied;
  record.time_unix_micros = time->get<int64_t>();
  return record;
}

absl::Status ValidateNodeId(std::string_view node_id) {
  const bool ok = !node_id.empty() && node_id.size() <= 64 &&
                  std::all_of(node_id.begin(), node_id.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' || c == '-';
                  });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError("cluster node id '" + std::string(node_id) +
                                    "' must be 1 to 64 of A-Z a-z 0-9 _ -");
}

std::string MemberKey(std::string_view node_id) { return kMembersPrefix + std::string(node_id); }

// ---------------------------------------------------------------------------- MemberTable

MemberTable::MemberTable(uint32_t partitions, absl::Duration lease,
                         std::function<absl::Time()> clock)
    : configured_partitions_(partitions), lease_(lease), clock_(std::move(clock)) {}

void MemberTable::Put(const MemberRecord& record, absl::Time heard) {
  // A record stamped ahead of this clock (skew) counts as heard now, not in the future.
  heard = std::min(heard, clock_());
  absl::MutexLock lock(&mu_);
  MemberStatus& member = members_[record.node_id];
  member.record = record;
  member.heard = heard;
}

void MemberTable::Remove(const std::string& node_id) {
  absl::MutexLock lock(&mu_);
  members_.erase(node_id);
}

void MemberTable::CountUnreadable() {
  absl::MutexLock lock(&mu_);
  ++unreadable_;
}

uint32_t MemberTable::PartitionsLocked() const {
  if (configured_partitions_ > 0) return configured_partitions_;
  uint32_t p = 1;
  for (const auto& [id, member] : members_) p = std::max(p, member.record.partitions);
  return p;
}

bool MemberTable::LiveLocked(const MemberStatus& member, absl::Time now,
                             uint32_t partitions) const {
  return member.record.partitions == partitions && now - member.heard < lease_;
}

uint32_t MemberTable::partitions() const {
  absl::ReaderMutexLock lock(&mu_);
  return PartitionsLocked();
}

std::vector<ReplicaInfo> MemberTable::LiveReplicas(uint32_t partition) const {
  const absl::Time now = clock_();
  std::vector<ReplicaInfo> live;
  {
    absl::ReaderMutexLock lock(&mu_);
    const uint32_t partitions = PartitionsLocked();
    for (const auto& [id, member] : members_) {
      if (member.record.partition != partition || !LiveLocked(member, now, partitions)) continue;
      live.push_back(
          {member.record.node_id, member.record.address, member.record.applied_sequence});
    }
  }
  std::sort(live.begin(), live.end(), [](const ReplicaInfo& a, const ReplicaInfo& b) {
    if (a.applied_sequence != b.applied_sequence) return a.applied_sequence > b.applied_sequence;
    return a.node_id < b.node_id;
  });
  return live;
}

std::vector<MemberStatus> MemberTable::Members() const {
  const absl::Time now = clock_();
  absl::ReaderMutexLock lock(&mu_);
  const uint32_t partitions = PartitionsLocked();
  std::vector<MemberStatus> members;
  members.reserve(members_.size());
  for (const auto& [id, member] : members_) {
    members.push_back(member);
    members.back().live = LiveLocked(member, now, partitions);
  }
  return members;
}

ClusterMapHealth MemberTable::Health() const {
  const absl::Time now = clock_();
  absl::ReaderMutexLock lock(&mu_);
  const uint32_t partitions = PartitionsLocked();
  ClusterMapHealth health;
  health.members = static_cast<uint32_t>(members_.size());
  health.unreadable_records = unreadable_;
  std::vector<bool> served(partitions, false);
  for (const auto& [id, member] : members_) {
    if (!LiveLocked(member, now, partitions)) continue;
    ++health.live_members;
    if (member.record.partition < partitions) served[member.record.partition] = true;
  }
  health.partitions_without_replica =
      static_cast<uint32_t>(std::count(served.begin(), served.end(), false));
  return health;
}

// -------------------------------------------------------------------------- ClusterMember

ClusterMember::ClusterMember(kvStore* kv, ClusterMemberOptions options)
    : kv_(kv), options_(std::move(options)), key_(MemberKey(options_.record.node_id)) {}

absl::StatusOr<std::unique_ptr<ClusterMember>> ClusterMember::Start(JetStream* jetstream,
                                                                    ClusterMemberOptions options) {
  absl::Status valid = ValidateNodeId(options.record.node_id);
  if (!valid.ok()) return valid;
  if (options.record.partitions == 0 || options.record.partition >= options.record.partitions) {
    return absl::InvalidArgumentError("cluster member: partition " +
                                      std::to_string(options.record.partition) + " of " +
                                      std::to_string(options.record.partitions));
  }
  absl::StatusOr<kvStore*> kv = OpenBucket(jetstream, options.bucket);
  if (!kv.ok()) return kv.status();
  std::unique_ptr<ClusterMember> member(new ClusterMember(*kv, std::move(options)));
  absl::Status first = RetryWhileUnavailable<absl::Status>(member->options_.bucket.start_timeout,
                                                           [&member] { return member->Beat(); });
  if (!first.ok()) return first;
  member->thread_ = std::thread([m = member.get()] { m->Run(); });
  return member;
}

ClusterMember::~ClusterMember() {
  Stop();
  kvStore_Destroy(kv_);
}

void ClusterMember::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

absl::Status ClusterMember::Leave() {
  Stop();
  const natsStatus s = kvStore_Delete(kv_, key_.c_str());
  if (s != NATS_OK) return NatsError(s, "deleting " + key_ + " from the cluster map");
  return absl::OkStatus();
}

absl::Status ClusterMember::Beat() {
  MemberRecord record = options_.record;
  record.applied_sequence = options_.applied_sequence ? options_.applied_sequence() : 0;
  record.time_unix_micros = absl::ToUnixMicros(options_.clock());
  std::string bytes = EncodeMemberRecord(record);
  if (!options_.bucket.signing_key.empty()) {
    bytes = SignMemberRecord(bytes, options_.bucket.signing_key, key_);
  }
  uint64_t revision = 0;
  const natsStatus s =
      kvStore_Put(&revision, kv_, key_.c_str(), bytes.data(), static_cast<int>(bytes.size()));
  absl::MutexLock lock(&mu_);
  if (s != NATS_OK) {
    ++health_.failed_heartbeats;
    last_error_ = NatsError(s, "writing " + key_ + " to the cluster map");
    return last_error_;
  }
  ++health_.heartbeats;
  health_.last_heartbeat = options_.clock();
  last_error_ = absl::OkStatus();
  return absl::OkStatus();
}

void ClusterMember::Run() {
  while (!stop_.WaitForNotificationWithTimeout(options_.heartbeat_interval)) {
    Beat().IgnoreError();  // counted in Health(); the next beat retries
  }
}

ClusterMemberHealth ClusterMember::Health() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

absl::Status ClusterMember::LastError() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

// ----------------------------------------------------------------------------- ClusterMap

ClusterMap::ClusterMap(kvStore* kv, ClusterMapOptions options)
    : kv_(kv),
      options_(std::move(options)),
      table_(options_.partitions, options_.lease, options_.clock) {}

absl::StatusOr<std::unique_ptr<ClusterMap>> ClusterMap::Start(JetStream* jetstream,
                                                              ClusterMapOptions options) {
  absl::StatusOr<kvStore*> kv = OpenBucket(jetstream, options.bucket);
  if (!kv.ok()) return kv.status();
  std::unique_ptr<ClusterMap> map(new ClusterMap(*kv, std::move(options)));
  map->thread_ = std::thread([m = map.get()] { m->Run(); });
  map->initial_state_.WaitForNotificationWithTimeout(map->options_.initial_wait);
  return map;
}

ClusterMap::~ClusterMap() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  kvStore_Destroy(kv_);
}

absl::Status ClusterMap::LastError() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

void ClusterMap::Run() {
  while (!stop_) {
    absl::Status failed = WatchOnce();
    if (failed.ok()) continue;  // stopped, or silent for too long: watch again at once
    {
      absl::MutexLock lock(&mu_);
      last_error_ = failed;
    }
    // A failed watch (NATS down, the bucket's leader moving) is set up again shortly.
    for (int i = 0; i < 5 && !stop_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kWatchPollMs));
    }
  }
}

absl::Status ClusterMap::WatchOnce() {
  kvWatcher* watcher = nullptr;
  const std::string keys = std::string(kMembersPrefix) + ">";
  natsStatus s = kvStore_Watch(&watcher, kv_, keys.c_str(), nullptr);
  if (s != NATS_OK) return NatsError(s, "watching the cluster map");
  absl::Status result = absl::OkStatus();
  bool replaying = true;  // the bucket's current records come first, then a null entry
  // Live members write every heartbeat interval, so a healthy watch is never silent for long.
  // The client's watch can stall without an error when the NATS server serving it dies (its
  // consumer is not recreated while JetStream elects new leaders): after `silence` without
  // an entry, the watch is set up again, which replays every member's latest record.
  const absl::Duration silence = options_.lease / 2;
  absl::Time last_entry = absl::Now();
  while (!stop_) {
    kvEntry* entry = nullptr;
    s = kvWatcher_Next(&entry, watcher, kWatchPollMs);
    if (s == NATS_TIMEOUT) {
      if (absl::Now() - last_entry > silence) break;
      continue;
    }
    last_entry = absl::Now();
    if (s != NATS_OK) {
      result = NatsError(s, "watching the cluster map");
      break;
    }
    {
      absl::MutexLock lock(&mu_);
      last_error_ = absl::OkStatus();
    }
    if (entry == nullptr) {  // the bucket's current records have all arrived
      replaying = false;
      if (!initial_state_.HasBeenNotified()) initial_state_.Notify();
      continue;
    }
    Handle(entry, replaying);
    kvEntry_Destroy(entry);
  }
  kvWatcher_Destroy(watcher);
  return result;
}

void ClusterMap::Handle(void* raw, bool replayed) {
  auto* entry = static_cast<kvEntry*>(raw);
  const std::string_view key = kvEntry_Key(entry);
  const std::string node_id(key.substr(std::string_view(kMembersPrefix).size()));
  if (kvEntry_Operation(entry) != kvOp_Put) {
    table_.Remove(node_id);
    return;
  }
  const std::string_view bytes(static_cast<const char*>(kvEntry_Value(entry)),
                               static_cast<size_t>(kvEntry_ValueLen(entry)));
  // With a cluster key, a record its member did not sign is ignored: a forged member
  // claiming a huge applied sequence would otherwise be asked first.
  if (!options_.bucket.signing_key.empty()) {
    const absl::Status verified = VerifyMemberRecord(bytes, options_.bucket.signing_key, key);
    if (!verified.ok()) {
      LogEvent(LogLevel::kWarn, "cluster_record_ignored",
               {{"key", std::string(key)}, {"error", verified.ToString()}});
      table_.CountUnreadable();
      return;
    }
  }
  absl::StatusOr<MemberRecord> record = DecodeMemberRecord(bytes);
  if (!record.ok() || record->node_id != node_id) {
    table_.CountUnreadable();
    return;
  }
  // A heartbeat arriving now was written now. A record replayed when the watch starts may be
  // old (its writer died): it counts from when the NATS server stored it (kvEntry_Created,
  // nanoseconds since the epoch on the server's clock).
  table_.Put(*record,
             replayed ? absl::FromUnixNanos(kvEntry_Created(entry)) : absl::InfiniteFuture());
}

}  // namespace cops
