// copsd: the COPS copy-detection server. Wires configuration, logging, the index, the
// application (CopyDetector), access control and the gRPC services; serves until SIGTERM or
// SIGINT, then stops accepting calls, drains those in flight and closes the index.
// Flags: `copsd --help`; configuration precedence: server/server_config.h.

#include <malloc.h>
#include <pthread.h>
#include <unistd.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "access/access_control.h"
#include "access/admission_control.h"
#include "access/audit_sink.h"
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
#include "replication/jetstream.h"
#include "replication/log_applier.h"
#include "replication/log_replica.h"
#include "replication/partitioning.h"
#include "replication/registration_log.h"
#include "replication/static_replica_directory.h"
#include "server/admin_service.h"
#include "server/cluster_presence.h"
#include "server/heap_trimmer.h"
#include "server/metrics.h"
#include "server/request_log.h"
#include "server/router.h"
#include "server/server_config.h"
#include "server/service.h"
#include "server/systemd_notifier.h"
#include "spdlog/spdlog.h"
#include "storage/data_dir.h"
#include "storage/index.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

int Fail(const absl::Status& status) {
  LogEvent(LogLevel::kError, "startup_failed", {{"error", status.ToString()}});
  std::cerr << "copsd: " << status << "\n";
  return 2;
}

absl::Status WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) return absl::InternalError("cannot write port file " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);  // readers never see a half-written file
  if (ec) return absl::InternalError("cannot write port file " + path + ": " + ec.message());
  return absl::OkStatus();
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
  return IndexGenerations::Open(std::move(index_options));
}

// Gives every collection that holds documents a record in the access store (those
// registered into with --auth=off by builds that did not record them), so that it is listed
// and a check may name it. A failure is logged: such a collection is still searched by checks
// that name no collection.
void RecordIndexedCollections(const IndexGenerations& generations, AccessControl& access) {
  absl::StatusOr<std::vector<std::string>> indexed =
      generations.Current()->index()->Collections();
  if (!indexed.ok()) {
    LogEvent(LogLevel::kWarn, "collections_not_recorded", {{"error", indexed.status().ToString()}});
    return;
  }
  for (const std::string& collection : *indexed) {
    absl::Status recorded = access.EnsureCollection(collection);
    if (!recorded.ok()) {
      LogEvent(LogLevel::kWarn, "collection_not_recorded",
               {{"collection", collection}, {"error", recorded.ToString()}});
    }
  }
}

// The gRPC server on config.listen with its limits, `services`, health and reflection, and
// the metrics interceptor when `metrics` is not null. Null (or *port == 0) when it cannot
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
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<uint64_t>(config.max_message_bytes, std::numeric_limits<int>::max())));
  builder.SetMaxSendMessageSize(static_cast<int>(
      std::min<uint64_t>(config.max_message_bytes, std::numeric_limits<int>::max())));
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
  for (grpc::Service* service : services) builder.RegisterService(service);
  if (metrics != nullptr) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> rpcs;
    rpcs.push_back(metrics->InterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(rpcs));
  }
  return builder.BuildAndStart();
}

// The HTTP API's options from copsd's flags (http/api.h).
HttpApiOptions HttpOptionsOf(const ServerConfig& config, bool auth) {
  HttpApiOptions o;
  o.listen = config.http_listen;
  o.auth_required = auth;
  o.max_body_bytes = config.http_max_body_bytes != 0 ? config.http_max_body_bytes
                                                     : config.max_document_bytes + (1u << 20);
  o.threads = config.http_threads;
  o.max_queued_connections = config.http_max_queued_connections;
  o.request_timeout = std::chrono::milliseconds(config.http_request_timeout_ms);
  o.idle_timeout = std::chrono::milliseconds(config.http_idle_timeout_ms);
  o.jobs.workers = config.http_job_workers;
  o.jobs.max_queued = config.http_max_queued_jobs;
  o.jobs.keep_results = std::chrono::seconds(config.http_job_retention_seconds);
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
  const int bytes = static_cast<int>(
      std::min<uint64_t>(config.max_message_bytes, std::numeric_limits<int>::max()));
  args.SetMaxReceiveMessageSize(bytes);
  args.SetMaxSendMessageSize(bytes);
  return args;
}

// copsd --log / --follow: the registration log, its applier and the write path the service
// uses (docs/scale-out.md). Empty in single-node mode, which never touches NATS. Members are
// destroyed in reverse order: the applier stops before the log connection closes.
struct LogRole {
  std::unique_ptr<JetStream> jetstream;
  std::unique_ptr<LogReplica> replica;
  std::unique_ptr<RegistrationLog> log;
  std::unique_ptr<DocumentWrites> writes;
  std::unique_ptr<LogApplier> applier;
  std::unique_ptr<LogPosition> position;
};

// The durable consumer's name when --log-consumer is not given: stable for one data
// directory on one host, distinct between them (FNV-1a of both).
std::string DefaultConsumerName(const std::string& data_dir) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::error_code ec;
  const std::string key = std::string(host) + ":" + fs::absolute(data_dir, ec).string();
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  char name[32];
  std::snprintf(name, sizeof(name), "copsd-%016llx", static_cast<unsigned long long>(h));
  return name;
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

absl::StatusOr<LogRole> StartLogRole(const ServerConfig& config, IndexGenerations* generations) {
  LogRole role;
  const bool primary = !config.log_url.empty();
  if (!primary && config.follow_url.empty()) return role;
  RegistrationStreamOptions stream;
  stream.url = primary ? config.log_url : config.follow_url;
  stream.security = NatsSecurityOf(config);
  stream.signing_key = config.cluster_key;
  stream.stream = config.log_stream;
  stream.replicas = config.log_replicas;
  const bool partitioned = config.partitions > 0;
  role.replica = std::make_unique<LogReplica>(generations, /*ids_from_log_sequence=*/partitioned);
  COPS_RETURN_IF_ERROR(role.replica->CheckIndexFollowsLog());
  // A node that applied events from the stream never creates it anew: the applier refuses
  // the missing stream instead (replication/log_applier.h).
  COPS_ASSIGN_OR_RETURN(const std::string stream_identity, role.replica->LogStreamIdentity());
  stream.create_if_missing = role.replica->AppliedLogSequence() == 0 && stream_identity.empty();
  COPS_ASSIGN_OR_RETURN(role.jetstream, JetStream::Connect(stream));
  if (primary) {
    role.log = std::make_unique<RegistrationLog>(role.jetstream.get());
    role.writes = std::make_unique<LoggedWrites>(role.log.get(), role.replica.get(),
                                                 std::chrono::seconds(30));
  } else {
    role.writes = std::make_unique<ReadOnlyWrites>(
        config.primary.empty() ? "the copsd started with --log " + config.follow_url
                               : config.primary);
  }
  LogApplierOptions applier;
  applier.durable = config.log_consumer.empty() ? DefaultConsumerName(config.data_dir)
                                                : config.log_consumer;
  // A partition's replica consumes its partition's subject; a gateway every partition's.
  if (partitioned) {
    applier.filter_subject =
        config.partition >= 0
            ? PartitionSubject(stream.subject, static_cast<uint32_t>(config.partition))
            : stream.subject + ".*";
  }
  COPS_ASSIGN_OR_RETURN(role.applier,
                        LogApplier::Start(role.jetstream.get(), role.replica.get(), applier));
  role.position = std::make_unique<ReplicaPosition>(role.replica.get(), role.applier.get());
  LogEvent(LogLevel::kInfo, primary ? "registration_log" : "following_log",
           {{"url", stream.url},
            {"stream", stream.stream},
            {"partitions", std::to_string(config.partitions)},
            {"partition", partitioned && config.partition >= 0 ? std::to_string(config.partition)
                                                               : "all"},
            {"consumer", applier.durable},
            {"applied_sequence", std::to_string(role.replica->AppliedLogSequence())}});
  return role;
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
                                           IndexGenerations* generations,
                                           Authorizer* authorizer, UsageLedger* usage,
                                           AdmissionControl* admission) {
  RouterRole role;
  if (config.route_url.empty()) return role;
  RegistrationStreamOptions stream;
  stream.url = config.route_url;
  stream.security = NatsSecurityOf(config);
  stream.signing_key = config.cluster_key;
  stream.stream = config.log_stream;
  stream.replicas = config.log_replicas;
  COPS_ASSIGN_OR_RETURN(role.jetstream, JetStream::Connect(stream));
  if (!config.replicas.empty()) {
    COPS_ASSIGN_OR_RETURN(StaticReplicaDirectory directory,
                          StaticReplicaDirectory::Parse(config.replicas, config.partitions));
    role.directory = std::make_unique<StaticReplicaDirectory>(std::move(directory));
  } else {
    COPS_ASSIGN_OR_RETURN(std::unique_ptr<ClusterMap> map,
                          StartClusterMap(config, role.jetstream.get()));
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

int Run(int argc, char** argv) {
  // Signals are taken by a sigwait thread; every thread created from here on inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

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
  const ServerConfig& config = *parsed;
  if (absl::Status replicated = CheckLogReplicas(config); !replicated.ok()) {
    std::cerr << "copsd: " << replicated.message() << "\n";
    return 2;
  }
  if (!config.show_cluster_url.empty()) {  // copsd --show-cluster NATS_URL: print and exit
    absl::Status shown = PrintClusterMap(config, std::cout);
    if (!shown.ok()) std::cerr << "copsd: " << shown << "\n";
    return shown.ok() ? 0 : 2;
  }

  // One malloc arena per check or registration at work, set before any thread starts: glibc's
  // default (8 per core) keeps a burst's memory in a dozen arenas whose free tops
  // malloc_trim() cannot return (copsd kept 220 MB instead of 45 MB after a burst;
  // docs/performance.md, "Overload").
  const AdmissionLimits admission_limits =
      ResolveAdmissionLimits(config, std::thread::hardware_concurrency());
  mallopt(M_ARENA_MAX, static_cast<int>(std::max<uint32_t>(admission_limits.max_calls, 2)));

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
  absl::StatusOr<AuthMode> auth_mode = ParseAuthMode(config.auth);
  if (!auth_mode.ok()) return Fail(auth_mode.status());
  TlsFiles tls{config.tls_cert, config.tls_key, config.tls_client_ca};
  absl::StatusOr<bool> auth_required = AuthRequired(*auth_mode, config.listen, tls);
  if (!auth_required.ok()) return Fail(auth_required.status());
  const bool auth = *auth_required;
  absl::Status listener_ok =
      CheckListenerSecurity(config.listen, tls.enabled(), auth, config.allow_insecure_remote);
  if (!listener_ok.ok()) return Fail(listener_ok);
  if (!config.http_listen.empty()) {  // plain HTTP: the same rule, without TLS
    absl::Status http_ok =
        CheckListenerSecurity(config.http_listen, /*tls=*/false, auth, config.allow_insecure_remote);
    if (!http_ok.ok()) return Fail(http_ok);
    absl::Status allow_ok = Webhooks::CheckAllowList(config.webhook_allow);
    if (!allow_ok.ok()) return Fail(allow_ok);
  }
  if (!IsLoopbackAddress(config.listen) && (!tls.enabled() || !auth)) {
    LogEvent(LogLevel::kWarn, "insecure_remote_listener",
             {{"listen", config.listen}, {"tls", tls.enabled() ? "on" : "off"},
              {"auth", auth ? "on" : "off"}});
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(tls);
  if (!credentials.ok()) return Fail(credentials.status());
  AccessControlOptions access_options;
  access_options.checker_floors = {config.checker_min_passage_units, config.checker_min_count};
  absl::StatusOr<std::unique_ptr<AccessControl>> access =
      OpenAccessControl(config.data_dir, /*bootstrap_admin=*/auth, access_options);
  if (!access.ok()) return Fail(access.status());
  RecordIndexedCollections(**generations, **access);
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

  absl::StatusOr<LogRole> log_role = StartLogRole(config, generations->get());
  if (!log_role.ok()) return Fail(log_role.status());
  // Checks and registrations at work at once, on this node or (a router) through it.
  AdmissionControl admission(admission_limits);
  absl::StatusOr<RouterRole> router_role =
      StartRouterRole(config, generations->get(), authorizer, &usage, &admission);
  if (!router_role.ok()) return Fail(router_role.status());

  // Receipt signing keys (docs/receipts.md), created at first start.
  absl::StatusOr<std::unique_ptr<ReceiptSigner>> receipts = ReceiptSigner::Open(data_dir);
  if (!receipts.ok()) return Fail(receipts.status());

  // Expired documents and old audit entries: swept now (resuming a sweep a crash cut
  // short) and then every --sweep-interval; stopped before the generations close.
  RetentionSweeperOptions sweep_options;
  sweep_options.interval =
      std::chrono::seconds(std::max<int64_t>(config.sweep_interval_seconds, 1));
  sweep_options.audit_retention_seconds = config.audit_retention_seconds;
  if (!config.log_url.empty()) {  // removals are logged writes (docs/scale-out.md)
    sweep_options.documents = ExpiredDocuments::kUnregisterInLog;
    sweep_options.log_writes = log_role->writes.get();
  } else if (!config.follow_url.empty()) {
    sweep_options.documents = ExpiredDocuments::kLeaveToPrimary;
  }
  auto sweeper =
      std::make_unique<RetentionSweeper>(generations->get(), (*access)->store(), sweep_options);
  sweeper->Start();

  // Once the calls at work are over, the heap's freed pages go back to the system
  // (server/heap_trimmer.h).
  HeapTrimmer trimmer({.period = absl::Seconds(1),
                       .load = [&admission] { return admission.load(); },
                       .trim = [] { malloc_trim(0); }});
  StreamWatchdog streams({.idle_timeout = absl::Seconds(config.stream_idle_seconds),
                          .max_age = absl::Seconds(config.stream_max_age_seconds)});
  CopyDetectionService service(generations->get(), authorizer, &usage, &audit, receipts->get(),
                               log_role->writes.get(), &admission, log_role->position.get(),
                               &streams);
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

  ClusterPresence cluster;  // --cluster-node-id: joined once serving (server/cluster_presence.h)
  std::unique_ptr<MetricsServer> metrics;  // --metrics-listen (server/metrics.h)
  if (!config.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> started =
        MetricsServer::Start(config.metrics_listen, [&generations, &admission, &cluster,
                                                     &router_role, &log_role, &audit] {
          ServerState state = ReadServerState(**generations);
          state.admission = admission.load();
          state.audit = audit.counters();
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
  // --http-listen: the HTTP/JSON API, calling this server's services in process.
  std::unique_ptr<HttpApi> http;
  if (!config.http_listen.empty()) {
    HttpApiOptions http_options = HttpOptionsOf(config, auth);
    if (auth) {
      // The service's own access control: a job's key is refused before the job is queued.
      AccessControl* access_control = access->get();
      http_options.authenticate = [access_control](const std::string& api_key,
                                                   const std::string& peer)
          -> absl::StatusOr<std::string> {
        absl::StatusOr<Principal> principal =
            access_control->AuthenticateCredentials(CallCredentials{api_key, {}, peer});
        if (!principal.ok()) return principal.status();
        return principal->name;
      };
    }
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
  // Joined before the port file is written: a node whose port file exists is in the map.
  if (!config.cluster_node_id.empty()) {
    absl::Status joined = cluster.Join(
        config, log_role->jetstream.get(),
        [replica = log_role->replica.get()] { return replica->AppliedLogSequence(); }, bound);
    if (!joined.ok()) {
      server->Shutdown();
      return Fail(joined);
    }
  }

  if (http != nullptr && !config.http_port_file.empty()) {
    absl::Status s = WritePortFile(config.http_port_file, http->port());
    if (!s.ok()) {
      server->Shutdown();
      return Fail(s);
    }
  }
  if (!config.port_file.empty()) {
    absl::Status s = WritePortFile(config.port_file, port);
    if (!s.ok()) {
      server->Shutdown();
      return Fail(s);
    }
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
  try {
    return cops::Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "copsd: fatal: " << e.what() << "\n";
    return 2;
  }
}
