#include "server/server_config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "CLI/CLI.hpp"
#include "core/status_macros.h"
#include "core/time_format.h"
#include "nlohmann/json.hpp"
#include "replication/cluster_map.h"
#include "replication/cluster_signature.h"
#include "storage/file_system.h"

namespace cops {
namespace {

const char* const kChunkingFlags[] = {"unit",           "strategy",       "k",
                                      "selection",      "p",              "w",
                                      "drop-numbers",   "min-word-chars", "min-sentence-words",
                                      "drop-stop-words", "verify-k"};

std::string Trim(std::string s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// key -> value of a config file: one JSON object, or "key = value" lines.
absl::StatusOr<std::map<std::string, std::string>> ReadConfigFile(const std::string& path) {
  COPS_ASSIGN_OR_RETURN(std::string text, FileSystem::Default()->ReadFile(path));
  std::map<std::string, std::string> out;
  const std::string trimmed = Trim(text);
  if (!trimmed.empty() && trimmed.front() == '{') {
    nlohmann::json j = nlohmann::json::parse(trimmed, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError("config file " + path + ": malformed JSON object");
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      out[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    }
    return out;
  }
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError("config file " + path + " line " + std::to_string(n) +
                                        ": expected key = value");
    }
    std::string value = Trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    out[Trim(line.substr(0, eq))] = value;
  }
  return out;
}

std::string EnvName(const std::string& flag) {
  std::string env = "COPS_";
  for (char c : flag) env += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return env;
}

}  // namespace

absl::StatusOr<ServerConfig> ParseServerConfig(int argc, const char* const* argv, bool* help,
                                               std::string* help_text) {
  ServerConfig c;
  CLI::App app("copsd: the COPS copy-detection server", "copsd");
  std::vector<std::string> names;
  auto option = [&](const std::string& name, auto& var, const std::string& desc) {
    names.push_back(name);
    return app.add_option("--" + name, var, desc)->envname(EnvName(name))->capture_default_str();
  };
  auto flag = [&](const std::string& name, bool& var, const std::string& desc) {
    names.push_back(name);
    return app.add_flag("--" + name, var, desc)->envname(EnvName(name));
  };
  // A size given in MiB, kept in bytes by `to_bytes`.
  auto mib_option = [&](const std::string& name, uint64_t default_mib,
                        std::function<void(uint64_t)> to_bytes, const std::string& desc) {
    names.push_back(name);
    return app.add_option_function<uint64_t>("--" + name, std::move(to_bytes), desc)
        ->envname(EnvName(name))
        ->default_str(std::to_string(default_mib));
  };
  // A duration ("90d", "12h", "30s"), kept in seconds.
  auto duration_option = [&](const std::string& name, int64_t* seconds,
                             const std::string& default_text, const std::string& desc) {
    names.push_back(name);
    return app
        .add_option_function<std::string>(
            "--" + name,
            [name, seconds](const std::string& text) {
              absl::StatusOr<int64_t> parsed = ParseDurationSeconds(text);
              if (!parsed.ok()) {
                throw CLI::ValidationError("--" + name, std::string(parsed.status().message()));
              }
              *seconds = *parsed;
            },
            desc)
        ->envname(EnvName(name))
        ->default_str(default_text);
  };
  c.index.block_cache_bytes = BlockCacheBytes(0);
  app.add_option("--config", c.config_file,
                 "Config file: key = value lines or a JSON object (flags and COPS_* win)")
      ->envname("COPS_CONFIG");
  option("data-dir", c.data_dir, "Data directory (index, hashing key, access store)");
  option("listen", c.listen, "Listen address HOST:PORT (port 0: any free port)");
  option("port-file", c.port_file, "Write the bound port to this file once serving");
  option("metrics-listen", c.metrics_listen,
         "Serve Prometheus metrics at http://HOST:PORT/metrics (empty: off)");
  option("unit", c.unit, "New index: unit word|sentence|paragraph");
  option("strategy", c.strategy,
         "New index: chunking one_unit|non_overlapping|overlapping|hashed_breakpoints");
  option("k", c.k, "New index: units per chunk (breakpoint modulus for hashed_breakpoints)");
  option("selection", c.selection, "New index: chunk selection all|mod_p|winnowing");
  option("p", c.p, "New index: modulus of mod_p selection");
  option("w", c.w, "New index: winnowing window in chunks");
  flag("drop-numbers", c.drop_numbers, "New index: drop number words");
  option("min-word-chars", c.min_word_chars, "New index: drop shorter words (0 = keep)");
  option("min-sentence-words", c.min_sentence_words,
         "New index: drop sentences with fewer words (0 = keep)");
  flag("drop-stop-words", c.drop_stop_words, "New index: drop English stop words");
  option("verify-k", c.verify_k,
         "New index: words per verification gram (complete fingerprint of each document, "
         "2 bytes per word; 0 = none, decide on the sampled chunks alone)");
  option("max-document-bytes", c.max_document_bytes, "Largest document accepted, bytes");
  option("max-message-bytes", c.max_message_bytes, "Largest gRPC message, bytes");
  option("bulk-window-documents", c.bulk_window_documents,
         "Documents of a bulk stream written to the index together (1-65536; 16 MiB at most)")
      ->check(CLI::Range(1u, 65536u));
  flag("sync-writes", c.index.sync_writes, "fsync every registration");
  option("store-texts", c.index.store_texts, "Keep registered documents' bytes (true|false)");
  mib_option(
      "block-cache-mb", 0, [&c](uint64_t mib) { c.index.block_cache_bytes = BlockCacheBytes(mib); },
      "RocksDB block cache for data blocks, MiB (0 = a quarter of physical memory, "
      "256 MiB to 16 GiB)");
  option("block-cache", c.index.block_cache,
         "Block cache implementation: lru|hyper-clock (RocksDB's HyperClockCache, "
         "experimental in RocksDB 7.8)")
      ->check(CLI::IsMember({"lru", "hyper-clock"}));
  mib_option(
      "write-buffer-mb", c.index.write_buffer_bytes >> 20,
      [&c](uint64_t mib) { c.index.write_buffer_bytes = mib << 20; },
      "RocksDB write buffer of each postings shard (and at most of the others), MiB");
  option("postings-memtables", c.index.postings_memtables,
         "Memtables each postings shard's write buffer is cut into, flushed together (1-64)")
      ->check(CLI::Range(1u, 64u));
  option("bloom-bits", c.index.bloom_bits_per_key,
         "Bloom filter bits per chunk key, 0-30 (0 = none)");
  option("background-jobs", c.index.background_jobs, "RocksDB flush and compaction threads");
  option("lookup-threads", c.index.lookup_threads,
         "Threads one check's index lookup may use, the handler's included (1-16)")
      ->check(CLI::Range(1, 16));
  option("postings-shards", c.index.postings_shards,
         "New index: postings column families, 1, 2 or 4 (an existing index keeps its own)")
      ->check(CLI::IsMember({1u, 2u, 4u}));
  option("compression", c.index.postings_compression,
         "Compression of the postings: lz4|zstd|snappy|none");
  option("postings-block-kb", c.index.postings_block_kb,
         "Data block size of the postings' files, KiB (new files; 1-256)");
  duration_option("sweep-interval", &c.sweep_interval_seconds, "1m",
                  "Time between sweeps removing expired documents and old audit entries "
                  "(e.g. 1m); expired documents are never reported whatever it is");
  duration_option("audit-retention", &c.audit_retention_seconds, "90d",
                  "How long audit entries (who matched which document) are kept, e.g. 90d "
                  "(0s = forever)");
  flag("mmap-reads", c.index.mmap_reads,
         "Read the index files through mmap (uncompressed blocks are read in place)");
  option("threads", c.threads, "Most handler threads");
  option("drain-seconds", c.drain_seconds, "Graceful shutdown: time for calls in flight");
  option("warm-cache", c.warm_cache,
         "Read the index into the block cache after starting, at low priority (true|false)");
  option("max-concurrent-calls", c.max_concurrent_calls,
         "Checks and registrations at work at once (0 = the CPU cores, 2 to threads - 2); "
         "more wait, then get RESOURCE_EXHAUSTED");
  option("max-inflight-bytes", c.max_inflight_bytes,
         "Document bytes of the checks and registrations at work at once (a larger document "
         "runs alone)")
      ->check(CLI::PositiveNumber);
  option("admission-wait-ms", c.admission_wait_ms,
         "Longest wait of a check or registration for room before RESOURCE_EXHAUSTED");
  duration_option("stream-idle-timeout", &c.stream_idle_seconds, "5m",
                  "A CheckStream or RegisterDocuments stream without a message this long is "
                  "ended (0s = never)");
  duration_option("stream-max-age", &c.stream_max_age_seconds, "1h",
                  "A stream open this long is ended, busy or not (0s = never)");
  option("checker-min-passage-units", c.checker_min_passage_units,
         "Checkers' checks use min_passage_units of at least this (spans of fewer words "
         "would rebuild registered text)");
  option("checker-min-count", c.checker_min_count,
         "Checkers' checks use min_count of at least this");
  option("max-streams-per-connection", c.max_streams_per_connection,
         "Calls open at once on one client connection (HTTP/2 streams)")
      ->check(CLI::PositiveNumber);
  mib_option(
      "transport-memory-mb", c.transport_memory_bytes >> 20,
      [&c](uint64_t mib) { c.transport_memory_bytes = mib << 20; },
      "Memory quota of gRPC's buffers (received requests not yet handled), MiB")
      ->check(CLI::PositiveNumber);
  option("keepalive-seconds", c.keepalive_seconds,
         "Ping a connection after this long without traffic")
      ->check(CLI::PositiveNumber);
  option("keepalive-timeout-seconds", c.keepalive_timeout_seconds,
         "Close a connection whose ping is not answered within this time")
      ->check(CLI::PositiveNumber);
  option("handshake-timeout-seconds", c.handshake_timeout_seconds,
         "Close a new connection that has not finished its handshake (TLS, HTTP/2) in this "
         "time")
      ->check(CLI::PositiveNumber);
  option("key-file", c.key_file, "Hashing key file, 32 hex digits (default <data-dir>/hash.key)");
  option("hash-key", c.hash_key, "Hashing key as 32 hex digits (prefer COPS_HASH_KEY)");
  option("tls-cert", c.tls_cert, "Serve TLS with this certificate chain (PEM)");
  option("tls-key", c.tls_key, "Private key of --tls-cert (PEM)");
  option("tls-client-ca", c.tls_client_ca, "Require client certificates signed by this CA");
  option("auth", c.auth,
         "Authentication auto|on|off (auto: off on loopback without --tls-client-ca only)");
  flag("allow-insecure-remote", c.allow_insecure_remote,
       "Allow a non-loopback listener without TLS or authentication");
  option("log", c.log_url,
         "Scale-out primary: registrations go through the registration log on NATS JetStream "
         "at this URL (docs/scale-out.md); empty: single node");
  option("follow", c.follow_url,
         "Read-only replica kept current from the registration log at this NATS URL");
  option("primary", c.primary, "With --follow: the primary's address, named when a write is refused");
  option("log-stream", c.log_stream, "JetStream stream of the registration log");
  option("log-replicas", c.log_replicas,
         "Copies JetStream keeps of the log, when this copsd creates the stream (1, 3, 5)")
      ->check(CLI::Range(1, 5));
  flag("allow-unreplicated-log", c.allow_unreplicated_log,
       "Accept --log-replicas below 3 (one NATS server: acknowledged events die with its store)");
  option("log-consumer", c.log_consumer,
         "This node's durable consumer of the log (default: from the host and data directory)");
  option("nats-user", c.nats_user, "NATS user name (with --nats-password)");
  option("nats-password", c.nats_password, "NATS password (prefer COPS_NATS_PASSWORD)");
  option("nats-creds", c.nats_creds, "NATS credentials file (.creds: user JWT and NKey seed)");
  option("nats-nkey", c.nats_nkey, "NATS user's public NKey (with --nats-nkey-seed)");
  option("nats-nkey-seed", c.nats_nkey_seed, "File holding the seed of --nats-nkey");
  option("nats-tls-ca", c.nats_tls_ca, "Connect to NATS over TLS, trusting this CA bundle (PEM)");
  option("nats-tls-cert", c.nats_tls_cert, "Client certificate (PEM) for NATS's TLS");
  option("nats-tls-key", c.nats_tls_key, "Private key of --nats-tls-cert (PEM)");
  option("cluster-key-file", c.cluster_key_file,
         "Sign registration events and cluster-map records with this cluster key (hex, 32+ "
         "bytes; every node the same) and believe only those signed with it");
  option("partitions", c.partitions,
         "Partitions of the cluster (docs/scale-out.md); 0 = the single-partition log");
  option("partition", c.partition,
         "With --follow and --partitions: the partition this replica serves (default: all)");
  option("route", c.route_url,
         "Router of a partitioned cluster whose registration log is at this NATS URL: checks "
         "fan out to one replica per partition, registrations go to the log");
  option("replica", c.replicas,
         "With --route: a replica, PARTITION=HOST:PORT (repeat for each replica); none: the "
         "replicas live in the cluster map (--cluster-bucket)");
  option("route-timeout-ms", c.route_timeout_ms,
         "With --route: deadline of a fanned-out call when the caller gives none")
      ->check(CLI::PositiveNumber);
  option("node-cert", c.node_cert,
         "With --route: client certificate (PEM) presented to the replicas (mutual TLS)");
  option("node-key", c.node_key, "Private key of --node-cert (PEM)");
  option("node-ca", c.node_ca,
         "With --route: call the replicas over TLS, trusting this CA bundle (PEM)");
  option("trusted-nodes", c.trusted_nodes,
         "Nodes whose forwarded caller identities this copsd believes: certificate names "
         "(CN/SAN) or sha256:<fingerprint> (repeat or comma-separate; needs --tls-client-ca)")
      ->delimiter(',');
  option("cluster-node-id", c.cluster_node_id,
         "With --log or --follow: join the cluster map under this name (A-Z a-z 0-9 _ -)");
  option("advertise", c.advertise,
         "With --cluster-node-id: the HOST:PORT routers reach this node at (default: the "
         "listener)");
  option("cluster-bucket", c.cluster_bucket, "JetStream key-value bucket of the cluster map");
  option("heartbeat-ms", c.heartbeat_ms,
         "Cluster map heartbeat interval; a member is live for 3 intervals after its last")
      ->check(CLI::Range(10u, 60000u));
  option("show-cluster", c.show_cluster_url,
         "Print the members of the cluster map at this NATS URL and exit");
  option("http-listen", c.http_listen,
         "Serve the HTTP/JSON API at HOST:PORT (docs/api.md; empty: off)");
  option("http-port-file", c.http_port_file,
         "Write the bound HTTP port to this file once serving");
  option("http-threads", c.http_threads, "HTTP connections served at once")
      ->check(CLI::Range(1u, 1024u));
  option("http-max-queued-connections", c.http_max_queued_connections,
         "HTTP connections waiting for a thread; beyond, 503");
  option("http-request-timeout-ms", c.http_request_timeout_ms,
         "Time an HTTP request's headers and body have to arrive after its first byte")
      ->check(CLI::PositiveNumber);
  option("http-idle-timeout-ms", c.http_idle_timeout_ms,
         "Time an HTTP connection waits for its next request")
      ->check(CLI::PositiveNumber);
  option("http-max-body-bytes", c.http_max_body_bytes,
         "Largest HTTP request body (0: --max-document-bytes + 1 MiB); larger: 413");
  option("http-job-workers", c.http_job_workers, "HTTP API jobs running at once")
      ->check(CLI::Range(1u, 256u));
  option("http-max-queued-jobs", c.http_max_queued_jobs,
         "HTTP API jobs waiting to run; beyond, 429");
  duration_option("http-job-retention", &c.http_job_retention_seconds, "1h",
                  "How long a finished HTTP API job's result is kept, e.g. 1h");
  option("webhook-allow", c.webhook_allow,
         "A host HTTP API jobs may call back, HOST[:PORT] (repeat for each; '*' = any host with "
         "public addresses); loopback, private and link-local addresses only when named")
      ->allow_extra_args(false);
  option("webhook-max-attempts", c.webhook_max_attempts,
         "Attempts of a webhook delivery, the first included")
      ->check(CLI::Range(1u, 30u));
  option("webhook-first-backoff-ms", c.webhook_first_backoff_ms,
         "Wait before a webhook delivery's second attempt; it doubles after each")
      ->check(CLI::Range(1u, 3600000u));
  option("webhook-timeout-ms", c.webhook_timeout_ms,
         "Time a webhook receiver has to accept the connection, take the body and answer")
      ->check(CLI::Range(1u, 600000u));
  option("log-level", c.log_level, "debug|info|warn|error");
  flag("log-json", c.log_json, "Log JSON lines instead of key=value");

  std::vector<std::string> args(argv + 1, argv + argc);
  std::reverse(args.begin(), args.end());  // CLI11 wants them reversed
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    *help = true;
    *help_text = app.help();
    return c;
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  if (!c.config_file.empty()) {
    COPS_ASSIGN_OR_RETURN(auto file, ReadConfigFile(c.config_file));
    for (auto& [raw_key, value] : file) {
      std::string key = raw_key;
      std::replace(key.begin(), key.end(), '_', '-');
      CLI::Option* opt = app.get_option_no_throw("--" + key);
      if (opt == nullptr || key == "config") {
        return absl::InvalidArgumentError("config file " + c.config_file + ": unknown key '" +
                                          raw_key + "'");
      }
      if (opt->count() > 0) continue;  // a flag or the environment wins
      try {
        opt->add_result(value);
        opt->run_callback();
      } catch (const CLI::Error& e) {
        return absl::InvalidArgumentError("config file " + c.config_file + ": " + raw_key +
                                          ": " + e.what());
      }
    }
  }
  for (const char* name : kChunkingFlags) {
    if (app.get_option("--" + std::string(name))->count() > 0) c.explicit_chunking.insert(name);
  }
  const int roles = !c.log_url.empty() + !c.follow_url.empty() + !c.route_url.empty();
  if (roles > 1) return absl::InvalidArgumentError("--log, --follow and --route exclude each other");
  if (c.partitions > 0 && !c.log_url.empty()) {
    return absl::InvalidArgumentError(
        "--log takes no --partitions: with partitions, register through a copsd --route");
  }
  if (c.partitions > 0 && roles == 0) {
    return absl::InvalidArgumentError("--partitions needs --follow or --route");
  }
  if (!c.route_url.empty() && c.partitions == 0) {
    return absl::InvalidArgumentError("--route needs --partitions");
  }
  if (c.partition >= 0 && (c.follow_url.empty() || c.partition >= static_cast<int>(c.partitions))) {
    return absl::InvalidArgumentError("--partition needs --follow and --partitions greater than it");
  }
  if (!c.replicas.empty() && c.route_url.empty()) {
    return absl::InvalidArgumentError("--replica needs --route");
  }
  if ((!c.node_cert.empty() || !c.node_key.empty() || !c.node_ca.empty()) &&
      c.route_url.empty()) {
    return absl::InvalidArgumentError("--node-cert, --node-key and --node-ca need --route");
  }
  if (c.node_cert.empty() != c.node_key.empty()) {
    return absl::InvalidArgumentError("--node-cert and --node-key go together");
  }
  if (!c.node_cert.empty() && c.node_ca.empty()) {
    return absl::InvalidArgumentError("--node-cert needs --node-ca (the replicas' CA)");
  }
  if (!c.trusted_nodes.empty() && c.tls_client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--trusted-nodes needs --tls-client-ca: nodes are known by verified client "
        "certificates");
  }
  if (!c.cluster_key_file.empty()) {
    COPS_ASSIGN_OR_RETURN(c.cluster_key, ReadClusterKey(c.cluster_key_file));
  }
  if (!c.cluster_node_id.empty()) {
    if (c.log_url.empty() && c.follow_url.empty()) {
      return absl::InvalidArgumentError("--cluster-node-id needs --log or --follow");
    }
    COPS_RETURN_IF_ERROR(ValidateNodeId(c.cluster_node_id));
  }
  return c;
}

NatsSecurity NatsSecurityOf(const ServerConfig& config) {
  return NatsSecurity{config.nats_user,     config.nats_password,  config.nats_creds,
                      config.nats_nkey,     config.nats_nkey_seed, config.nats_tls_ca,
                      config.nats_tls_cert, config.nats_tls_key};
}

absl::StatusOr<ChunkingParams> ResolveChunkingParams(const ServerConfig& config,
                                                     const std::optional<ChunkingParams>& recorded,
                                                     const HashKey& key) {
  const bool is_new = !recorded.has_value();
  const ChunkingParams base = recorded.value_or(ChunkingParams());
  if (!is_new && base.key_id != key.Id()) {
    return absl::FailedPreconditionError("the hashing key (id " + key.Id() +
                                         ") is not the one the index in " + config.data_dir +
                                         " was built with (id " + base.key_id + ")");
  }
  ChunkingParams p = base;
  auto given = [&](const char* name) { return is_new || config.explicit_chunking.count(name); };
  if (given("unit")) {
    COPS_ASSIGN_OR_RETURN(p.unit, ParseUnitKind(config.unit));
  }
  if (given("strategy")) {
    COPS_ASSIGN_OR_RETURN(p.strategy, ParseChunkStrategy(config.strategy));
  }
  if (given("selection")) {
    COPS_ASSIGN_OR_RETURN(p.selection, ParseSelectionKind(config.selection));
  }
  if (given("k")) p.k = config.k;
  if (given("p")) p.p = config.p;
  if (given("w")) p.w = config.w;
  if (given("drop-numbers")) p.enhancements.drop_numbers = config.drop_numbers;
  if (given("min-word-chars")) p.enhancements.min_word_chars = config.min_word_chars;
  if (given("min-sentence-words")) {
    p.enhancements.min_sentence_words = config.min_sentence_words;
  }
  if (given("drop-stop-words")) p.enhancements.drop_stop_words = config.drop_stop_words;
  if (given("verify-k")) p.verify_k = config.verify_k;
  // Verification grams are word grams: an index of other units is created without them.
  if (is_new && p.unit != UnitKind::kWord && !config.explicit_chunking.count("verify-k")) {
    p.verify_k = 0;
  }
  if (is_new && p.verify_k == 0) p.dense_chunks = 0;  // dense storage needs verification
  p.key_id = key.Id();
  if (!is_new && !(p == base)) {
    return absl::FailedPreconditionError(
        "the index in " + config.data_dir + " was created with other chunking parameters (" +
        p.DiffWith(base) + "); drop the conflicting flags to use it as it is: " +
        base.Describe());
  }
  COPS_RETURN_IF_ERROR(p.Validate());
  return p;
}

AdmissionLimits ResolveAdmissionLimits(const ServerConfig& config, unsigned cores) {
  // Two handler threads are left to the cheap calls (stats, health, admin): checks and
  // registrations, at work or waiting, take at most the others.
  const uint32_t usable = config.threads > 3 ? config.threads - 2 : 1;
  AdmissionLimits limits;
  limits.max_calls = config.max_concurrent_calls != 0
                         ? config.max_concurrent_calls
                         : std::min<uint32_t>(std::max<uint32_t>(cores, 2), usable);
  limits.max_bytes = config.max_inflight_bytes;
  limits.max_waiting = usable > limits.max_calls ? usable - limits.max_calls : 0;
  limits.max_wait = absl::Milliseconds(config.admission_wait_ms);
  return limits;
}

uint64_t BlockCacheBytes(uint64_t block_cache_mb) {
  if (block_cache_mb != 0) return block_cache_mb << 20;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  const uint64_t physical = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
  return std::clamp<uint64_t>(physical / 4, 256ull << 20, 16ull << 30);
}

}  // namespace cops
