#include "replication/cluster_presence.h"

#include <cstdio>
#include <string>
#include <utility>

#include "core/status_macros.h"
#include "logging/log_event.h"

namespace cops {

absl::Status ClusterPresence::Join(JetStream* jetstream, ClusterMemberOptions options) {
  const MemberRecord record = options.record;
  const std::string bucket = options.bucket.bucket;
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<ClusterMember> member,
                        ClusterMember::Start(jetstream, std::move(options)));
  LogEvent(LogLevel::kInfo, "joined_cluster_map",
           {{"node_id", record.node_id}, {"address", record.address}, {"bucket", bucket}});
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

absl::Status PrintClusterMap(RegistrationStreamOptions connection, ClusterMapOptions map,
                             std::ostream& out) {
  connection.create_stream = false;
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<JetStream> js, JetStream::Connect(connection));
  map.bucket.create = false;
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<ClusterMap> members,
                        ClusterMap::Start(js.get(), std::move(map)));
  const absl::Time now = absl::Now();
  for (const MemberStatus& m : members->Members()) {
    char ago[32];
    std::snprintf(ago, sizeof(ago), "%.1f", absl::ToDoubleSeconds(now - m.heard));
    out << m.record.node_id << " " << m.record.address << " " << m.record.partition << "/"
        << m.record.partitions << " " << m.record.applied_sequence << " " << ago << " "
        << (m.live ? "live" : "expired") << "\n";
  }
  return absl::OkStatus();
}

}  // namespace cops
