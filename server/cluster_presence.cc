#include "server/cluster_presence.h"

#include <cstdio>
#include <utility>

#include "core/status_macros.h"
#include "server/request_log.h"

namespace cops {
namespace {

constexpr int kLeaseIntervals = 3;  // docs/scale-out.md: two lost beats are tolerated

}  // namespace

absl::Status ClusterPresence::Join(const ServerConfig& config, JetStream* jetstream,
                                   std::function<uint64_t()> applied, const std::string& bound) {
  ClusterMemberOptions options;
  options.bucket.bucket = config.cluster_bucket;
  options.bucket.replicas = config.log_replicas;
  options.bucket.signing_key = config.cluster_key;
  options.record.node_id = config.cluster_node_id;
  options.record.address = config.advertise.empty() ? bound : config.advertise;
  if (config.partitions > 0 && config.partition >= 0) {
    options.record.partition = static_cast<uint32_t>(config.partition);
    options.record.partitions = config.partitions;
  }  // else every document: partition 0 of 1
  options.heartbeat_interval = absl::Milliseconds(config.heartbeat_ms);
  options.applied_sequence = std::move(applied);
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<ClusterMember> member,
                        ClusterMember::Start(jetstream, std::move(options)));
  LogEvent(LogLevel::kInfo, "joined_cluster_map",
           {{"node_id", config.cluster_node_id},
            {"address", config.advertise.empty() ? bound : config.advertise},
            {"bucket", config.cluster_bucket}});
  absl::MutexLock lock(&mu_);
  member_ = std::move(member);
  return absl::OkStatus();
}

void ClusterPresence::Leave() {
  absl::MutexLock lock(&mu_);
  if (member_ == nullptr) return;
  absl::Status left = member_->Leave();
  if (!left.ok()) {
    LogEvent(LogLevel::kWarn, "cluster_map_leave_failed", {{"error", left.ToString()}});
  }
  member_.reset();
}

std::optional<ClusterMemberHealth> ClusterPresence::Health() const {
  absl::MutexLock lock(&mu_);
  if (member_ == nullptr) return std::nullopt;
  return member_->Health();
}

namespace {

ClusterMapOptions MapOptions(const ServerConfig& config) {
  ClusterMapOptions options;
  options.bucket.bucket = config.cluster_bucket;
  options.bucket.replicas = config.log_replicas;
  options.bucket.signing_key = config.cluster_key;
  options.partitions = config.partitions;
  options.lease = absl::Milliseconds(kLeaseIntervals * int64_t{config.heartbeat_ms});
  return options;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterMap>> StartClusterMap(const ServerConfig& config,
                                                            JetStream* jetstream) {
  return ClusterMap::Start(jetstream, MapOptions(config));
}

absl::Status PrintClusterMap(const ServerConfig& config, std::ostream& out) {
  RegistrationStreamOptions connection;
  connection.url = config.show_cluster_url;
  connection.security = NatsSecurityOf(config);
  connection.create_stream = false;
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<JetStream> js, JetStream::Connect(connection));
  ClusterMapOptions options = MapOptions(config);
  options.bucket.create = false;
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<ClusterMap> map,
                        ClusterMap::Start(js.get(), std::move(options)));
  const absl::Time now = absl::Now();
  for (const MemberStatus& m : map->Members()) {
    char ago[32];
    std::snprintf(ago, sizeof(ago), "%.1f", absl::ToDoubleSeconds(now - m.heard));
    out << m.record.node_id << " " << m.record.address << " " << m.record.partition << "/"
        << m.record.partitions << " " << m.record.applied_sequence << " " << ago << " "
        << (m.live ? "live" : "expired") << "\n";
  }
  return absl::OkStatus();
}

}  // namespace cops
