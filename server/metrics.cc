#include "server/metrics.h"

#include <chrono>
#include <exception>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "convert/sandbox.h"
#include "engine/copy_detector.h"
#include "engine/index_generations.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace cops {

class MetricsServer::RpcMetrics {
 public:
  explicit RpcMetrics(prometheus::Registry& registry)
      : started_(prometheus::BuildCounter()
                     .Name("grpc_server_started_total")
                     .Help("Total number of RPCs started on the server.")
                     .Register(registry)),
        handled_(prometheus::BuildCounter()
                     .Name("grpc_server_handled_total")
                     .Help("Total number of RPCs completed on the server, regardless of "
                           "success or failure.")
                     .Register(registry)),
        seconds_(prometheus::BuildHistogram()
                     .Name("grpc_server_handling_seconds")
                     .Help("Histogram of response latency (seconds) of gRPC that had been "
                           "application-level handled by the server.")
                     .Register(registry)) {}

  prometheus::Family<prometheus::Counter>& started_;
  prometheus::Family<prometheus::Counter>& handled_;
  prometheus::Family<prometheus::Histogram>& seconds_;
};

namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::ServerRpcInfo;

// From a millisecond to a minute: lookups take milliseconds, large PDFs and bulk streams
// seconds to minutes.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  return *buckets;
}

const char* TypeName(ServerRpcInfo::Type type) {
  switch (type) {
    case ServerRpcInfo::Type::UNARY:
      return "unary";
    case ServerRpcInfo::Type::CLIENT_STREAMING:
      return "client_stream";
    case ServerRpcInfo::Type::SERVER_STREAMING:
      return "server_stream";
    case ServerRpcInfo::Type::BIDI_STREAMING:
      return "bidi_stream";
  }
  return "unknown";
}

// One per call: counts the start when made, the end when the status is sent.
class RpcInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcInterceptor(MetricsServer::RpcMetrics* metrics, ServerRpcInfo* info)
      : metrics_(metrics), start_(std::chrono::steady_clock::now()) {
    // "/cops.v1.CopyDetection/CheckDocument" -> service, method.
    const std::string full = info->method() != nullptr ? info->method() : "";
    const size_t slash = full.rfind('/');
    labels_ = {{"grpc_type", TypeName(info->type())},
               {"grpc_service", slash == std::string::npos ? "" : full.substr(1, slash - 1)},
               {"grpc_method", slash == std::string::npos ? full : full.substr(slash + 1)}};
    metrics_->started_.Add(labels_).Increment();
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start_;
      metrics_->seconds_.Add(labels_, LatencyBuckets()).Observe(seconds.count());
      prometheus::Labels handled = labels_;
      handled["grpc_code"] = std::string(absl::StatusCodeToString(
          static_cast<absl::StatusCode>(methods->GetSendStatus().error_code())));
      metrics_->handled_.Add(handled).Increment();
    }
    methods->Proceed();
  }

 private:
  MetricsServer::RpcMetrics* const metrics_;
  const std::chrono::steady_clock::time_point start_;
  prometheus::Labels labels_;
};

class RpcInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcInterceptorFactory(MetricsServer::RpcMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(ServerRpcInfo* info) override {
    return new RpcInterceptor(metrics_, info);
  }

 private:
  MetricsServer::RpcMetrics* const metrics_;
};

// The cops_* gauges and converter counters, computed at each scrape.
class ServerStateCollector : public prometheus::Collectable {
 public:
  explicit ServerStateCollector(std::function<ServerState()> state) : state_(std::move(state)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const ServerState s = state_();
    const ConvertWorkerCounts worker = GetConvertWorkerCounts();
    std::vector<prometheus::MetricFamily> out;
    auto gauge = [&out](std::string name, std::string help, double value,
                        std::vector<prometheus::ClientMetric::Label> labels = {}) {
      if (out.empty() || out.back().name != name) {
        out.push_back({std::move(name), std::move(help), prometheus::MetricType::Gauge, {}});
      }
      prometheus::ClientMetric metric;
      metric.label = std::move(labels);
      metric.gauge.value = value;
      out.back().metric.push_back(std::move(metric));
    };
    auto counter = [&out](std::string name, std::string help, double value,
                          std::vector<prometheus::ClientMetric::Label> labels = {}) {
      if (out.empty() || out.back().name != name) {
        out.push_back({std::move(name), std::move(help), prometheus::MetricType::Counter, {}});
      }
      prometheus::ClientMetric metric;
      metric.label = std::move(labels);
      metric.counter.value = value;
      out.back().metric.push_back(std::move(metric));
    };
    gauge("cops_documents", "Documents registered in the live index.", s.index.documents);
    gauge("cops_postings", "Postings (chunk occurrences) in the live index.", s.index.postings);
    const std::string disk = "Bytes of the live index's files on disk, by part.";
    gauge("cops_disk_bytes", disk, s.index.disk_bytes, {{"part", "all"}});
    gauge("cops_disk_bytes", disk, s.index.postings_disk_bytes, {{"part", "postings"}});
    gauge("cops_disk_bytes", disk, s.index.verify_disk_bytes, {{"part", "verify"}});
    gauge("cops_disk_bytes", disk, s.index.stem_pairs_disk_bytes, {{"part", "stem_pairs"}});
    gauge("cops_pending_compaction_bytes",
          "Bytes RocksDB estimates its compactions of the postings still have to rewrite.",
          s.index.pending_compaction_bytes);
    gauge("cops_running_compactions", "Compactions running.", s.index.running_compactions);
    gauge("cops_block_cache_bytes", "Bytes the live index's block cache holds.",
          s.index.block_cache_bytes);
    gauge("cops_block_cache_warming",
          "1 while copsd reads the index into its block cache after starting.",
          s.index.block_cache_warming ? 1 : 0);
    gauge("cops_hash_filter_bytes",
          "Memory of the bucketed postings' filter of stored hashes (mapped; pages are "
          "resident once a hash reaches them).",
          s.index.hash_filter_bytes);
    gauge("cops_hash_filter_ready",
          "1 once the filter of stored hashes holds every bucket's hashes and lookups ask it.",
          s.index.hash_filter_ready ? 1 : 0);
    gauge("cops_bulk_loading", "1 while a bulk load is in progress.", s.bulk_loading ? 1 : 0);
    gauge("cops_index_generation", "Number of the live index generation (one per key).",
          s.rotation.generation);
    gauge("cops_key_rotation_state",
          "Hashing key rotation: 1 idle, 2 rebuilding, 3 switching, 4 done, 5 failed.",
          static_cast<double>(s.rotation.state));
    gauge("cops_key_rotation_documents_done",
          "Documents re-keyed into the new generation by the current or last rotation.",
          s.rotation.documents_done);
    gauge("cops_key_rotation_documents",
          "Documents the current or last rotation has to re-key.",
          s.rotation.documents_total);
    gauge("cops_admission_calls", "Checks and registrations at work.", s.admission.calls);
    gauge("cops_admission_bytes", "Document bytes of the checks and registrations at work.",
          static_cast<double>(s.admission.bytes));
    gauge("cops_admission_waiting", "Checks and registrations waiting for room.",
          s.admission.waiting);
    counter("cops_stem_pairs_from_cache_total",
            "Looked-up content-stem pairs that the cache of common pairs answered without a "
            "read, since the live index opened.",
            static_cast<double>(s.index.stem_pairs_from_cache));
    counter("cops_admission_refused_total",
            "Checks and registrations refused with RESOURCE_EXHAUSTED for lack of room.",
            static_cast<double>(s.admission.refused));
    const std::string checks = "Checks answered, by verdict.";
    counter("cops_checks_total", checks, static_cast<double>(s.checks.clean),
            {{"verdict", "clean"}});
    counter("cops_checks_total", checks, static_cast<double>(s.checks.violation),
            {{"verdict", "violation"}});
    const std::string decided =
        "Violating checks by the evidence that decided a violating match: shared passages "
        "(chunks), content-stem pairs, ordered 3-grams (heavy revisions).";
    counter("cops_check_violations_total", decided, static_cast<double>(s.checks.by_chunks),
            {{"decided_by", "chunks"}});
    counter("cops_check_violations_total", decided, static_cast<double>(s.checks.by_stem_pairs),
            {{"decided_by", "stem_pairs"}});
    counter("cops_check_violations_total", decided, static_cast<double>(s.checks.by_heavy_revision),
            {{"decided_by", "heavy_revision"}});
    counter("cops_audit_records_written_total", "Audit records written to the access store.",
            static_cast<double>(s.audit.written));
    counter("cops_audit_records_failed_total",
            "Audit records lost because the access store refused them.",
            static_cast<double>(s.audit.failed));
    counter("cops_audit_records_dropped_total",
            "Audit records dropped because the audit queue was full.",
            static_cast<double>(s.audit.dropped));
    if (s.cluster_member) {
      const ClusterMemberHealth& m = *s.cluster_member;
      counter("cops_cluster_heartbeats_total", "Records this node wrote to the cluster map.",
              static_cast<double>(m.heartbeats));
      counter("cops_cluster_heartbeat_failures_total",
              "Cluster map heartbeats that failed (NATS down, no JetStream quorum).",
              static_cast<double>(m.failed_heartbeats));
      gauge("cops_cluster_heartbeat_age_seconds",
            "Seconds since this node's last successful cluster map heartbeat.",
            absl::ToDoubleSeconds(absl::Now() - m.last_heartbeat));
    }
    if (s.log_applier) {
      counter("cops_log_apply_failures_total",
              "Registration log events whose apply failed here and is tried again (a full "
              "disk, a converter past its time budget, a local limit): never skipped.",
              static_cast<double>(s.log_applier->failed_applies));
      counter("cops_log_events_set_aside_total",
              "Registration log messages that are no event (malformed): recorded as applied "
              "without effect.",
              static_cast<double>(s.log_applier->set_aside));
      gauge("cops_log_stream_refused",
            "1 once this node refused the registration log's stream (missing, recreated, "
            "truncated): it applies nothing more, and its health is NOT_SERVING.",
            s.log_applier->refused ? 1 : 0);
    }
    if (s.cluster_map) {
      const ClusterMapHealth& m = *s.cluster_map;
      gauge("cops_cluster_members", "Members in the cluster map, live or not.", m.members);
      gauge("cops_cluster_live_members", "Members heard within their lease.", m.live_members);
      gauge("cops_cluster_partitions_without_replica",
            "Partitions with no live replica: checks get partial answers.",
            m.partitions_without_replica);
      counter("cops_cluster_unreadable_records_total",
              "Cluster map records skipped (another version, bad bytes).",
              static_cast<double>(m.unreadable_records));
    }
    counter("cops_converter_worker_failures_total",
            "Conversions whose worker process crashed, could not start or gave no result.",
            worker.failures);
    counter("cops_converter_worker_timeouts_total",
            "Conversions whose worker was stopped at its time or CPU budget.", worker.timeouts);
    return out;
  }

 private:
  const std::function<ServerState()> state_;
};

}  // namespace

ServerState ReadServerState(const IndexGenerations& generations) {
  ServerState state;
  {
    // Scoped: a generation held here would keep a key rotation from retiring it.
    const std::shared_ptr<CopyDetector> detector = generations.Current();
    state.index = detector->Stats();
    state.bulk_loading = detector->index()->bulk_loading();
  }
  state.rotation = generations.Progress();
  return state;
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::function<ServerState()> state) {
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->registry_ = std::make_shared<prometheus::Registry>();
  server->rpc_ = std::make_unique<RpcMetrics>(*server->registry_);
  server->state_ = std::make_shared<ServerStateCollector>(std::move(state));
  try {
    // civetweb throws when it cannot listen.
    server->exposer_ = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/2);
  } catch (const std::exception& e) {
    return absl::UnavailableError("metrics: cannot listen on " + listen + ": " + e.what());
  }
  server->exposer_->RegisterCollectable(server->registry_);
  server->exposer_->RegisterCollectable(server->state_);
  return server;
}

MetricsServer::~MetricsServer() = default;

int MetricsServer::port() const {
  const std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MetricsServer::InterceptorFactory() {
  return std::make_unique<RpcInterceptorFactory>(rpc_.get());
}

}  // namespace cops
