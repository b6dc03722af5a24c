// copsd: the COPS copy-detection server. Wires configuration, logging, the index, the
// application (CopyDetector), access control and the gRPC services; serves until SIGTERM or
// SIGINT, then stops accepting calls, drains those in flight and closes the index.
// Flags: `copsd --help`; configuration precedence: server/server_config.h.

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "access/access_control.h"
#include "access/admission_control.h"
#include "access/audit_sink.h"
#include "access/call_policy.h"
#include "access/forwarded_identity.h"
#include "access/open_authorizer.h"
#include "access/transport_security.h"
#include "access/usage_ledger.h"
#include "convert/sandbox.h"
#include "core/status_macros.h"
#include "engine/copy_detector.h"
#include "engine/index_generations.h"
#include "engine/receipt_signer.h"
#include "engine/retention_sweeper.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "http/api.h"
#include "proto/grpc_process.h"
#include "replication/cluster_presence.h"
#include "replication/jetstream.h"
#include "replication/log_applier.h"
#include "replication/log_replica.h"
#include "replication/log_role.h"
#include "replication/partitioning.h"
#include "replication/registration_log.h"
#include "replication/static_replica_directory.h"
#include "server/admin_service.h"
#include "server/heap_trimmer.h"
#include "server/malloc_tuning.h"
#include "server/metrics.h"
#include "server/request_log.h"
#include "server/router.h"
#include "server/server_config.h"
#include "server/service.h"
#include "server/systemd_notifier.h"
#include "server/unparsed_requests.h"
#include "spdlog/spdlog.h"
#include "storage/data_dir.h"
#include "storage/file_system.h"
#include "storage/index.h"

namespace cops {
namespace {

int Fail(const absl::Status& status) {
  LogEvent(LogLevel::kError, "startup_failed", {{"error", status.ToString()}});
  std::cerr << "copsd: " << status << "\n";
  return 2;
}

// Written whole or not at all: a reader never sees a half-written port.
absl::Status WritePortFile(const std::string& path, int port) {
  return WriteFileDurably(*FileSystem::Default(), path, std::to_string(port) + "\n", 0644);
}

// The live index generation and its key; a rotation left unfinished by a crash is cleaned
// up here (server/index_generations.h).
absl::StatusOr<std::unique_ptr<IndexGenerations>> OpenGenerations(const ServerConfig& config) {
  IndexGenerationsOptions index_options;
  index_options.data_dir = config.data_dir;
  index_options.key = KeySource{config.hash_key, config.key_file};
  index_options.chunking = [&config](const std::optional<ChunkingParams>& recorded,
                                     const HashKey& key) {
    return ResolveChunkingParams(config, recorded, key);
  };
  index_options.index = config.index;
  // A router (--route) checks through its replicas, never against its own index.
  index_options.warm_cache_fill =
      config.warm_cache && config.route_url.empty() ? ServerConfig::kWarmCacheFill : 0;
  index_options.detector.max_document_bytes = config.max_document_bytes;
  index_options.detector.bulk_window_documents = config.bulk_window_documents;
  index_options.detector.pdf_hidden_text = config.pdf_hidden_text;
  index_options.detector.heavy_revisions = config.heavy_revisions;
  return IndexGenerations::Open(std::move(index_options));
}

// --max-message-bytes as gRPC takes it (an int).
int MessageLimit(const ServerConfig& config) {
  return static_cast<int>(
      std::min<uint64_t>(config.max_message_bytes, std::numeric_limits<int>::max()));
}

// The gRPC server on config.listen with its limits, `services`, health and reflection,
// INVALID_ARGUMENT for unary requests that do not parse (server/unparsed_requests.h) and the
// metrics interceptor when `metrics` is not null. Null (or *port == 0) when it cannot
// listen.
std::unique_ptr<grpc::Server> BuildServer(
    const ServerConfig& config, const std::shared_ptr<grpc::ServerCredentials>& credentials,
    const std::vector<grpc::Service*>& services, MetricsServer* metrics, int* port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, credentials, port);
  // Without SO_REUSEPORT: port 0 would bind one ephemeral port per completion queue (all
  // serving the API), and a second server on a taken port would start and share it silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(MessageLimit(config));
  builder.SetMaxSendMessageSize(MessageLimit(config));
  // gRPC's defaults are open: unbounded streams per connection, pings every 2 hours, 120 s
  // for a handshake (docs/operations.md, "Limits").
  auto millis = [](uint32_t seconds) {
    return static_cast<int>(std::min<uint64_t>(uint64_t{seconds} * 1000, INT32_MAX));
  };
  builder.AddChannelArgument(
      GRPC_ARG_MAX_CONCURRENT_STREAMS,
      static_cast<int>(std::min<uint32_t>(config.max_streams_per_connection, INT32_MAX)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, millis(config.keepalive_seconds));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             millis(config.keepalive_timeout_seconds));
  // Idle connections are pinged too, and pings go on while a long call sends nothing, so
  // that a vanished peer's connection (and its buffers) is closed within
  // keepalive + time-out.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             millis(config.handshake_timeout_seconds));
  grpc::ResourceQuota quota("copsd");
  quota.SetMaxThreads(static_cast<int>(std::max<uint32_t>(config.threads, 2)));
  quota.Resize(config.transport_memory_bytes);
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              static_cast<int>(std::clamp<uint32_t>(
                                  config.kept_threads, 1, std::max<uint32_t>(config.threads, 2))));
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> rpcs;
  rpcs.push_back(UnparsedRequestInterceptorFactory());  // first: the metrics see its status
  if (metrics != nullptr) rpcs.push_back(metrics->InterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(rpcs));
  return builder.BuildAndStart();
}

// The HTTP API's options from copsd's flags (http/api.h).
HttpApiOptions HttpOptionsOf(const ServerConfig& config, bool auth) {
  HttpApiOptions o;
  o.listen = config.http_listen;
  o.auth_required = auth;
  o.tls_cert = config.tls_cert;  // HTTPS with gRPC's TLS files
  o.tls_key = config.tls_key;
  o.tls_client_ca = config.tls_client_ca;
  o.max_body_bytes = config.http_max_body_bytes != 0 ? config.http_max_body_bytes
                                                     : config.max_document_bytes + (1u << 20);
  o.threads = config.http_threads;
  o.heavy_revisions = config.heavy_revisions;
  o.max_queued_connections = config.http_max_queued_connections;
  o.request_timeout = std::chrono::milliseconds(config.http_request_timeout_ms);
  o.idle_timeout = std::chrono::milliseconds(config.http_idle_timeout_ms);
  o.jobs.workers = config.http_job_workers;
  o.jobs.max_queued = config.http_max_queued_jobs;
  o.jobs.max_queued_per_owner = config.http_max_queued_jobs_per_caller;
  o.jobs.keep_results = std::chrono::seconds(config.http_job_retention_seconds);
  o.jobs.max_result_bytes = config.http_job_results_bytes;
  o.idempotency_max_bytes = config.http_idempotency_bytes;
  o.webhooks.allow = config.webhook_allow;
  o.webhooks.max_attempts = config.webhook_max_attempts;
  o.webhooks.first_backoff = std::chrono::milliseconds(config.webhook_first_backoff_ms);
  o.webhooks.attempt_timeout = std::chrono::milliseconds(config.webhook_timeout_ms);
  o.webhooks.keep = std::chrono::seconds(config.http_job_retention_seconds);
  return o;
}

// The in-process channel's limits: those of the listener.
grpc::ChannelArguments InProcessArgs(const ServerConfig& config) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(MessageLimit(config));
  args.SetMaxSendMessageSize(MessageLimit(config));
  return args;
}

// A log (or cluster map) kept by fewer than 3 NATS servers loses acknowledged registrations
// with one server's store: said explicitly or refused.
absl::Status CheckLogReplicas(const ServerConfig& config) {
  const bool clustered =
      !config.log_url.empty() || !config.follow_url.empty() || !config.route_url.empty();
  if (!clustered || config.log_replicas >= ServerConfig::kSafeLogReplicas ||
      config.allow_unreplicated_log) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      "--log-replicas " + std::to_string(config.log_replicas) + " keeps fewer than " +
      std::to_string(ServerConfig::kSafeLogReplicas) +
      " copies of the registration log: a registration acknowledged by one NATS server is lost "
      "with its store; run 3 NATS servers, or pass --allow-unreplicated-log to accept it");
}

// The registration log's connection as copsd's flags describe it, at `url`.
RegistrationStreamOptions RegistrationStreamOf(const ServerConfig& config, const std::string& url) {
  RegistrationStreamOptions stream;
  stream.url = url;
  stream.security = NatsSecurityOf(config);
  stream.signing_key = config.cluster_key;
  stream.stream = config.log_stream;
  stream.replicas = config.log_replicas;
  return stream;
}

// copsd --log / --follow (replication/log_role.h); none of them: single node, no NATS.
LogRoleOptions LogRoleOptionsOf(const ServerConfig& config) {
  LogRoleOptions o;
  o.primary = !config.log_url.empty();
  if (o.primary || !config.follow_url.empty()) {
    o.stream = RegistrationStreamOf(config, o.primary ? config.log_url : config.follow_url);
  } else {
    o.stream.url.clear();
  }
  o.primary_address = config.primary;
  o.partitions = config.partitions;
  if (config.partition >= 0) o.partition = static_cast<uint32_t>(config.partition);
  o.consumer = config.log_consumer;
  o.data_dir = config.data_dir;
  return o;
}

// The cluster map as copsd's flags describe it: its bucket, P, and a lease of
// kClusterLeaseIntervals heartbeats (the members' own interval).
ClusterMapOptions ClusterMapOptionsOf(const ServerConfig& config) {
  ClusterMapOptions options;
  options.bucket.bucket = config.cluster_bucket;
  options.bucket.replicas = config.log_replicas;
  options.bucket.signing_key = config.cluster_key;
  options.partitions = config.partitions;
  options.lease = absl::Milliseconds(kClusterLeaseIntervals * int64_t{config.heartbeat_ms});
  return options;
}

// This node's record in the cluster map (--cluster-node-id): at --advertise, else `bound`
// (the listener's HOST:PORT), serving --partition of --partitions (a node holding every
// document, unpartitioned or a gateway, is partition 0 of 1: a router of P > 1 partitions
// never picks it), heartbeating every --heartbeat-ms with `applied`.
ClusterMemberOptions ClusterMemberOptionsOf(const ServerConfig& config, const std::string& bound,
                                            std::function<uint64_t()> applied) {
  ClusterMemberOptions options;
  options.bucket = ClusterMapOptionsOf(config).bucket;
  options.record.node_id = config.cluster_node_id;
  options.record.address = config.advertise.empty() ? bound : config.advertise;
  if (config.partitions > 0 && config.partition >= 0) {
    options.record.partition = static_cast<uint32_t>(config.partition);
    options.record.partitions = config.partitions;
  }
  options.heartbeat_interval = absl::Milliseconds(config.heartbeat_ms);
  options.applied_sequence = std::move(applied);
  return options;
}

// copsd --route: the router of a partitioned cluster (server/router.h). Its replicas come
// from a ReplicaDirectory: the fixed --replica list when given, else the cluster map (a
// JetStream key-value bucket the replicas heartbeat into, replication/cluster_map.h).
struct RouterRole {
  std::unique_ptr<JetStream> jetstream;
  std::unique_ptr<RegistrationLog> log;
  std::unique_ptr<ReplicaDirectory> directory;
  ClusterMap* cluster_map = nullptr;  // `directory` when it is the cluster map
  std::unique_ptr<RouterService> service;
};

absl::StatusOr<RouterRole> StartRouterRole(const ServerConfig& config,
                                           IndexGenerations* generations, Authorizer* authorizer,
                                           UsageLedger* usage, AdmissionControl* admission,
                                           CheckVerdictCounter* verdicts) {
  RouterRole role;
  if (config.route_url.empty()) return role;
  const RegistrationStreamOptions stream = RegistrationStreamOf(config, config.route_url);
  COPS_ASSIGN_OR_RETURN(role.jetstream, JetStream::Connect(stream));
  if (!config.replicas.empty()) {
    COPS_ASSIGN_OR_RETURN(StaticReplicaDirectory directory,
                          StaticReplicaDirectory::Parse(config.replicas, config.partitions));
    role.directory = std::make_unique<StaticReplicaDirectory>(std::move(directory));
  } else {
    COPS_ASSIGN_OR_RETURN(std::unique_ptr<ClusterMap> map,
                          ClusterMap::Start(role.jetstream.get(), ClusterMapOptionsOf(config)));
    role.cluster_map = map.get();
    role.directory = std::move(map);
  }
  role.log = std::make_unique<RegistrationLog>(role.jetstream.get());
  RouterOptions options;
  options.base_subject = stream.subject;
  options.timeout = std::chrono::milliseconds(config.route_timeout_ms);
  if (!config.node_ca.empty()) {
    COPS_ASSIGN_OR_RETURN(options.node_tls.root_ca, ReadPem(config.node_ca, "--node-ca"));
  }
  if (!config.node_cert.empty()) {
    COPS_ASSIGN_OR_RETURN(options.node_tls.cert, ReadPem(config.node_cert, "--node-cert"));
    COPS_ASSIGN_OR_RETURN(options.node_tls.key, ReadPem(config.node_key, "--node-key"));
  }
  // Enough that the admitted checks' calls to the other partitions never queue.
  const uint32_t partitions = role.directory->partitions();
  options.fan_out_threads =
      partitions > 1 ? size_t{admission->limits().max_calls} * (partitions - 1) : 1;
  options.verdicts = verdicts;
  role.service = std::make_unique<RouterService>(role.directory.get(), role.log.get(),
                                                 generations, authorizer, usage, admission,
                                                 options);
  LogEvent(LogLevel::kInfo, "routing",
           {{"url", stream.url},
            {"stream", stream.stream},
            {"partitions", std::to_string(config.partitions)},
            {"node_tls", config.node_ca.empty() ? "off" : config.node_cert.empty() ? "tls" : "mtls"},
            {"replicas", config.replicas.empty() ? "cluster map " + config.cluster_bucket
                                                  : std::to_string(config.replicas.size())}});
  return role;
}

// Parses copsd's configuration into `config`; the exit code when the command is answered
// without serving (--help, --show-cluster, a bad flag), else nullopt.
std::optional<int> ParseOrAnswer(int argc, char** argv, ServerConfig* config) {
  bool help = false;
  std::string help_text;
  absl::StatusOr<ServerConfig> parsed = ParseServerConfig(argc, argv, &help, &help_text);
  if (help) {
    std::cout << help_text;
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << "copsd: " << parsed.status().message() << "\n";
    return 2;
  }
  *config = *std::move(parsed);
  if (absl::Status replicated = CheckLogReplicas(*config); !replicated.ok()) {
    std::cerr << "copsd: " << replicated.message() << "\n";
    return 2;
  }
  if (config->show_cluster_url.empty()) return std::nullopt;
  absl::Status shown = PrintClusterMap(RegistrationStreamOf(*config, config->show_cluster_url),
                                       ClusterMapOptionsOf(*config), std::cout);
  if (!shown.ok()) std::cerr << "copsd: " << shown << "\n";
  return shown.ok() ? 0 : 2;
}

// Whether callers must authenticate (--auth, the listener, TLS), once every listener is
// known to be allowed (CheckListenerSecurity: HTTP(S) with the same TLS files, the same rule)
// and the webhook allow-list is valid; a remote listener without TLS or authentication is
// logged.
absl::StatusOr<bool> ResolveAuth(const ServerConfig& config, const TlsFiles& tls) {
  COPS_ASSIGN_OR_RETURN(const AuthMode mode, ParseAuthMode(config.auth));
  COPS_ASSIGN_OR_RETURN(const bool auth, AuthRequired(mode, config.listen, tls));
  COPS_RETURN_IF_ERROR(
      CheckListenerSecurity(config.listen, tls.enabled(), auth, config.allow_insecure_remote));
  if (!config.http_listen.empty()) {
    COPS_RETURN_IF_ERROR(CheckListenerSecurity(config.http_listen, tls.enabled(), auth,
                                               config.allow_insecure_remote));
    COPS_RETURN_IF_ERROR(Webhooks::CheckAllowList(config.webhook_allow));
  }
  if (!IsLoopbackAddress(config.listen) && (!tls.enabled() || !auth)) {
    LogEvent(LogLevel::kWarn, "insecure_remote_listener",
             {{"listen", config.listen}, {"tls", tls.enabled() ? "on" : "off"},
              {"auth", auth ? "on" : "off"}});
  }
  return auth;
}

// The sweeper of expired documents and old audit entries (every --sweep-interval): a --log
// node unregisters them through the log (`log_writes`), a --follow node leaves them to the
// primary (docs/scale-out.md).
std::unique_ptr<RetentionSweeper> MakeSweeper(const ServerConfig& config,
                                              IndexGenerations* generations,
                                              PrincipalStore* store, DocumentWrites* log_writes) {
  RetentionSweeperOptions options;
  options.interval = std::chrono::seconds(std::max<int64_t>(config.sweep_interval_seconds, 1));
  options.audit_retention_seconds = config.audit_retention_seconds;
  if (!config.log_url.empty()) {
    options.documents = ExpiredDocuments::kUnregisterInLog;
    options.log_writes = log_writes;
  } else if (!config.follow_url.empty()) {
    options.documents = ExpiredDocuments::kLeaveToPrimary;
  }
  return std::make_unique<RetentionSweeper>(generations, store, options);
}

// Makes a serving node known: joins the cluster map (--cluster-node-id) before the port files
// are written, so that a node whose port file exists is in the map, then writes the HTTP
// port file and the gRPC one (the readiness tests and scripts wait for).
absl::Status Announce(const ServerConfig& config, const std::string& bound, int port,
                      const HttpApi* http, const LogRole& log_role, ClusterPresence& cluster) {
  if (!config.cluster_node_id.empty()) {
    COPS_RETURN_IF_ERROR(cluster.Join(
        log_role.jetstream.get(),
        ClusterMemberOptionsOf(config, bound, [replica = log_role.replica.get()] {
          return replica->AppliedLogSequence();
        })));
  }
  if (http != nullptr && !config.http_port_file.empty()) {
    COPS_RETURN_IF_ERROR(WritePortFile(config.http_port_file, http->port()));
  }
  if (!config.port_file.empty()) COPS_RETURN_IF_ERROR(WritePortFile(config.port_file, port));
  return absl::OkStatus();
}

int Run(int argc, char** argv) {
  // Signals are taken by a sigwait thread; every thread created from here on inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ServerConfig config;
  if (std::optional<int> answered = ParseOrAnswer(argc, argv, &config)) return *answered;

  // One malloc arena per core (at most one per call at work), set before any thread starts:
  // glibc's default (8 per core) keeps a burst's memory in a dozen arenas whose free tops
  // malloc_trim() cannot return (copsd kept 220 MB instead of 45 MB after a burst;
  // docs/performance.md, "Overload"), and with one per call at work (4 a core) a gateway's
  // copied messages cost copsd 0.52-0.61 ms against 0.49-0.56.
  const unsigned cores = std::thread::hardware_concurrency();
  const AdmissionLimits admission_limits = ResolveAdmissionLimits(config, cores);
  mallopt(M_ARENA_MAX,
          static_cast<int>(std::max<uint32_t>(std::min(cores, admission_limits.max_calls), 2)));

  SetJsonLogs(config.log_json);
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  // Every file copsd creates (RocksDB's included, which asks for 0644) is its owner's alone:
  // the index holds the registered texts, the data directory the keys.
  umask(077);

  DataDir data_dir(config.data_dir);
  absl::Status created = data_dir.Create();
  if (!created.ok()) return Fail(created);

  absl::StatusOr<std::unique_ptr<IndexGenerations>> generations = OpenGenerations(config);
  if (!generations.ok()) return Fail(generations.status());

  // Access control: open loopback mode or API keys / client certificates.
  const TlsFiles tls{config.tls_cert, config.tls_key, config.tls_client_ca};
  absl::StatusOr<bool> auth_required = ResolveAuth(config, tls);
  if (!auth_required.ok()) return Fail(auth_required.status());
  const bool auth = *auth_required;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(tls);
  if (!credentials.ok()) return Fail(credentials.status());
  AccessControlOptions access_options;
  access_options.checker_floors = {config.checker_min_passage_units, config.checker_min_count};
  access_options.min_free_disk_mb = config.index.min_free_disk_mb;
  absl::StatusOr<std::unique_ptr<AccessControl>> access =
      OpenAccessControl(config.data_dir, /*bootstrap_admin=*/auth, access_options);
  if (!access.ok()) return Fail(access.status());
  RecordIndexedCollections(*(*generations)->Current()->index(), **access);
  OpenAuthorizer open_authorizer(access->get());  // collections as with auth on
  // With auth on, a caller's identity forwarded by a router is believed from the nodes of
  // --trusted-nodes only, and refused from everyone else (access/forwarded_identity.h).
  absl::StatusOr<TrustedNodes> trusted_nodes = ParseTrustedNodes(config.trusted_nodes);
  if (!trusted_nodes.ok()) return Fail(trusted_nodes.status());
  if (!trusted_nodes->empty() && !auth) {
    return Fail(absl::InvalidArgumentError(
        "--trusted-nodes needs authentication on (--auth on, or auto with --tls-client-ca)"));
  }
  ForwardedIdentityAuthorizer forwarding(access->get(), *std::move(trusted_nodes),
                                         access_options.checker_floors);
  Authorizer* authorizer = auth ? static_cast<Authorizer*>(&forwarding) : &open_authorizer;
  // Rate limits and quotas, and the audit trail, over the access store. Declared after
  // `access`, so the audit sink writes what it holds before the store closes.
  UsageLedger usage((*access)->store());
  AuditSink audit(AppendTo((*access)->store()), MatchesFrom((*access)->store()));

  absl::StatusOr<LogRole> log_role = StartLogRole(LogRoleOptionsOf(config), generations->get());
  if (!log_role.ok()) return Fail(log_role.status());
  // Checks and registrations at work at once, on this node or (a router) through it.
  AdmissionControl admission(admission_limits);
  CheckVerdictCounter check_verdicts;  // checks answered, for the metrics
  absl::StatusOr<RouterRole> router_role =
      StartRouterRole(config, generations->get(), authorizer, &usage, &admission, &check_verdicts);
  if (!router_role.ok()) return Fail(router_role.status());

  // Receipt signing keys (docs/receipts.md), created at first start.
  absl::StatusOr<std::unique_ptr<ReceiptSigner>> receipts = ReceiptSigner::Open(data_dir);
  if (!receipts.ok()) return Fail(receipts.status());

  // Expired documents and old audit entries: swept now (resuming a sweep a crash cut
  // short) and then every --sweep-interval; stopped before the generations close.
  std::unique_ptr<RetentionSweeper> sweeper =
      MakeSweeper(config, generations->get(), (*access)->store(), log_role->writes.get());
  sweeper->Start();

  // Once the calls at work are over, the index's write buffers and the heap's freed pages
  // go back to the system (server/heap_trimmer.h).
  HeapTrimmer trimmer({.period = absl::Seconds(1),
                       .load = [&admission] { return admission.load(); },
                       .trim =
                           [&generations] {
                             (*generations)->Current()->index()->ReleaseWriteBuffers();
                             malloc_trim(0);
                           }});
  StreamWatchdog streams({.idle_timeout = absl::Seconds(config.stream_idle_seconds),
                          .max_age = absl::Seconds(config.stream_max_age_seconds)});
  CopyDetectionService service(generations->get(), authorizer, &usage, &audit, receipts->get(),
                               log_role->writes.get(), &admission, log_role->position.get(),
                               &streams, &check_verdicts);
  // A router serves the API over the cluster's replicas instead of its own index.
  grpc::Service* api = router_role->service != nullptr
                           ? static_cast<grpc::Service*>(router_role->service.get())
                           : &service;
  AdminService admin(authorizer, access->get(), &usage, generations->get(), receipts->get());
  if (log_role->replica != nullptr) {
    // A rotated index would not carry the applied log sequence: it would then decline every
    // later event (docs/scale-out.md).
    admin.RefuseKeyRotation(
        "this node applies the registration log (--log/--follow), whose nodes cannot rotate "
        "their hashing key yet: start a node with the new key on an empty data directory, "
        "let it catch up from the log, then retire this one");
  }

  ClusterPresence cluster;  // --cluster-node-id: joined once serving (replication/)
  std::unique_ptr<MetricsServer> metrics;  // --metrics-listen (server/metrics.h)
  if (!config.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> started = MetricsServer::Start(
        config.metrics_listen,
        [&generations, &admission, &cluster, &router_role, &log_role, &audit, &check_verdicts] {
          ServerState state = ReadServerState(**generations);
          state.admission = admission.load();
          state.audit = audit.counters();
          state.checks = check_verdicts.Read();
          state.cluster_member = cluster.Health();
          if (log_role->applier != nullptr) state.log_applier = log_role->applier->Health();
          if (router_role->cluster_map != nullptr) {
            state.cluster_map = router_role->cluster_map->Health();
          }
          return state;
        });
    if (!started.ok()) return Fail(started.status());
    metrics = *std::move(started);
  }

  int port = 0;
  std::unique_ptr<grpc::Server> server =
      BuildServer(config, *credentials, {api, &admin}, metrics.get(), &port);
  if (server == nullptr || port == 0) {
    return Fail(absl::UnavailableError("cannot listen on " + config.listen));
  }
  std::string bound = config.listen.substr(0, config.listen.rfind(':') + 1) + std::to_string(port);
  // A node that refused the log's stream applies nothing more: its health says so.
  if (grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
      health != nullptr && log_role->applier != nullptr) {
    log_role->applier->OnRefusal([health](const absl::Status&) { health->SetServingStatus(false); });
  }
  // --http-listen: the HTTP/JSON API, calling this server's services in process.
  std::unique_ptr<HttpApi> http;
  if (!config.http_listen.empty()) {
    HttpApiOptions http_options = HttpOptionsOf(config, auth);
    http_options.webhooks.store = (*access)->store();  // registrations survive restarts
    // The service's own access control: a job's key is refused before the job is queued.
    if (auth) http_options.authenticate = ApiKeyAuthenticator(access->get());
    absl::StatusOr<std::unique_ptr<HttpApi>> started =
        HttpApi::Start(http_options, server->InProcessChannel(InProcessArgs(config)));
    if (!started.ok()) {
      server->Shutdown();
      return Fail(started.status());
    }
    http = *std::move(started);
    LogEvent(LogLevel::kInfo, "serving_http",
             {{"listen", config.http_listen}, {"port", std::to_string(http->port())}});
  }
  {
    // Scoped: a generation held here would keep a key rotation from retiring it.
    const std::shared_ptr<CopyDetector> detector = (*generations)->Current();
    const IndexStats stats = detector->Stats();
    LogEvent(LogLevel::kInfo, "serving",
             {{"listen", bound},
              {"port", std::to_string(port)},
              {"data_dir", config.data_dir},
              {"documents", std::to_string(stats.documents)},
              {"params", detector->params().Describe()},
              {"key_id", detector->params().key_id},
              {"generation", std::to_string((*generations)->Progress().generation)},
              {"receipt_key_id", (*receipts)->Keys().back().key_id},
              {"tls", tls.enabled() ? "on" : "off"},
              {"auth", auth ? "on" : "off"},
              {"convert_worker", ConvertWorkerPath()},
              {"max_concurrent_calls", std::to_string(admission.limits().max_calls)},
              {"max_waiting_calls", std::to_string(admission.limits().max_waiting)},
              {"metrics_port", metrics ? std::to_string(metrics->port()) : "off"}});
  }
  absl::Status ready = Announce(config, bound, port, http.get(), *log_role, cluster);
  if (!ready.ok()) {
    server->Shutdown();
    return Fail(ready);
  }

  SystemdNotifier notifier;  // Type=notify units (deploy/systemd/copsd.service)
  notifier.Ready("serving on " + bound);
  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    notifier.Stopping();
    LogEvent(LogLevel::kInfo, "shutting_down",
             {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
              {"drain_seconds", std::to_string(config.drain_seconds)}});
    cluster.Leave();  // routers stop choosing this node before it drains
    // A bulk load's final compaction can take minutes: abandon it so the drain is not held
    // up (RocksDB redoes it as ordinary compaction after the restart).
    (*generations)->Current()->index()->AbortManualCompactions();
    if (http != nullptr) http->Stop();  // its requests in flight finish over the open server
    server->Shutdown(std::chrono::system_clock::now() +
                     std::chrono::seconds(config.drain_seconds));
  });
  server->Wait();
  signal_thread.join();
  http.reset();
  if (log_role->applier != nullptr) log_role->applier->OnRefusal(nullptr);  // before the server
  server.reset();
  metrics.reset();  // its scrapes read the generations
  sweeper.reset();
  cluster.Leave();  // no-op after a signal; its heartbeats read the applier's index
  if (log_role->applier != nullptr) log_role->applier->Stop();  // applies into the generations
  generations->reset();  // stops a rotation in progress, flushes and closes RocksDB
  LogEvent(LogLevel::kInfo, "stopped", {});
  return 0;
}

}  // namespace
}  // namespace cops

int main(int argc, char** argv) {
  cops::ExecWithMallocTunables(argv);
  cops::PrepareGrpcProcess();
  try {
    return cops::Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "copsd: fatal: " << e.what() << "\n";
    return 2;
  }
}
