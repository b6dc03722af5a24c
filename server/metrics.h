#ifndef COPS_SERVER_METRICS_H_
#define COPS_SERVER_METRICS_H_

// copsd's Prometheus metrics, served in the text exposition format at
// http://<--metrics-listen>/metrics by prometheus-cpp's pull exposer (docs/operations.md).
//
// RPCs, counted for every method of every service (health checks included) by a gRPC server
// interceptor, with the names and labels of gRPC's Prometheus interceptors
// (go-grpc-prometheus); grpc_type is unary | client_stream | server_stream | bidi_stream,
// grpc_code the status code's name (OK, NOT_FOUND, ...):
//   grpc_server_started_total{grpc_type,grpc_service,grpc_method}
//   grpc_server_handled_total{grpc_type,grpc_service,grpc_method,grpc_code}
//   grpc_server_handling_seconds{grpc_type,grpc_service,grpc_method}  histogram
// Server state, read when scraped:
//   cops_documents, cops_postings                  the live index
//   cops_disk_bytes{part="all"|"postings"|"verify"|"stem_pairs"}  index files on disk
//   cops_stem_pairs_from_cache_total                 content-stem pairs answered by the cache
//   cops_pending_compaction_bytes, cops_running_compactions, cops_block_cache_bytes,
//   cops_block_cache_warming
//   cops_hash_filter_bytes, cops_hash_filter_ready  bucketed postings' filter of stored hashes
//   cops_bulk_loading                                1 during a bulk load
//   cops_index_generation, cops_key_rotation_state (KeyRotationState's number),
//   cops_key_rotation_documents_done, cops_key_rotation_documents (to re-key)
//   cops_converter_worker_failures_total, cops_converter_worker_timeouts_total
//   cops_admission_calls, cops_admission_bytes      checks and registrations at work, and
//                                                    their document bytes
//   cops_admission_waiting                           waiting for room
//   cops_admission_refused_total                     refused with RESOURCE_EXHAUSTED
//   cops_checks_total{verdict="clean"|"violation"}   checks answered
//   cops_check_violations_total{decided_by="chunks"|"stem_pairs"|"heavy_revision"}
//                                                    violating checks by the evidence that
//                                                    decided a violating match
//   cops_audit_records_{written,failed,dropped}_total  the audit trail (access/audit_sink.h):
//                                                    written, lost to a store error, dropped
//                                                    by a full queue
//   cops_cluster_heartbeats_total, cops_cluster_heartbeat_failures_total,
//   cops_cluster_heartbeat_age_seconds               a cluster map member's heartbeats
//   cops_cluster_members, cops_cluster_live_members, cops_cluster_partitions_without_replica,
//   cops_cluster_unreadable_records_total            the cluster map as a router sees it
//
// Thread-safety: a started MetricsServer is thread-safe; the interceptors it makes may run
// on any gRPC thread, and `state` is called on the exposer's threads, one scrape at a time
// or concurrently.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "access/admission_control.h"
#include "access/audit_sink.h"
#include "engine/key_rotation_progress.h"
#include "grpcpp/support/server_interceptor.h"
#include "replication/cluster_map.h"
#include "replication/log_applier.h"
#include "server/check_verdicts.h"
#include "storage/index.h"

namespace prometheus {
class Collectable;
class Exposer;
class Registry;
}  // namespace prometheus

namespace cops {

// The server state the cops_* gauges show.
struct ServerState {
  IndexStats index;
  bool bulk_loading = false;
  KeyRotationProgress rotation;
  AdmissionLoad admission;  // access/admission_control.h
  AuditSink::Counters audit;  // access/audit_sink.h: records written, lost, dropped
  CheckVerdicts checks;       // server/check_verdicts.h: checks answered, by verdict and evidence
  // Scale-out (replication/cluster_map.h): this node's heartbeats into the cluster map, and
  // the map as this node sees it; nullopt when the node has no such part.
  std::optional<ClusterMemberHealth> cluster_member;
  std::optional<ClusterMapHealth> cluster_map;
  // The registration log's applier (--log, --follow); nullopt without one.
  std::optional<LogApplierHealth> log_applier;
};

class IndexGenerations;

// The state of the live generation of `generations` (copsd's `state` for Start(), with the
// admission counters added).
ServerState ReadServerState(const IndexGenerations& generations);

class MetricsServer {
 public:
  // Serves /metrics on `listen` (HOST:PORT; port 0 picks a free port). `state` is called at
  // each scrape. UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, std::function<ServerState()> state);
  // Stops serving.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The bound port.
  int port() const;

  // For grpc::ServerBuilder::experimental().SetInterceptorCreators(): counts each RPC of
  // the server it is added to. The factory must not outlive this MetricsServer.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

  class RpcMetrics;  // the grpc_server_* families

 private:
  MetricsServer() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<RpcMetrics> rpc_;
  std::shared_ptr<prometheus::Collectable> state_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace cops

#endif  // COPS_SERVER_METRICS_H_
