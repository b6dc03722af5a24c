#ifndef COPS_SERVER_SERVER_CONFIG_H_
#define COPS_SERVER_SERVER_CONFIG_H_

// copsd's configuration.
//
// Precedence: command-line flags > environment (COPS_<FLAG>, e.g. COPS_DATA_DIR) > config file
// (--config FILE: "key = value" lines, '#' comments, or one JSON object; keys are the flag
// names without dashes, e.g. "listen" or "max-document-bytes") > built-in defaults.
//
// The data directory's layout: storage/data_dir.h.
//
// Thread-safety: plain functions and value types, used at start-up.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "access/admission_control.h"
#include "core/hash_key.h"
#include "core/params.h"
#include "replication/jetstream.h"
#include "storage/index.h"

namespace cops {

struct ServerConfig {
  std::string config_file;
  std::string data_dir = "./cops-data";
  std::string listen = "127.0.0.1:7411";  // port 0 picks a free port (see port_file)
  std::string port_file;  // when set, the bound port is written there once serving
  std::string metrics_listen;  // HOST:PORT of the Prometheus /metrics endpoint; empty = off

  // Chunking parameters: used only when a new index is created. An existing index keeps its
  // recorded parameters; a flag given explicitly that contradicts them is an error.
  std::string unit = "word";
  std::string strategy = "overlapping";
  uint32_t k = 5;
  std::string selection = "winnowing";
  uint32_t p = 4;
  uint32_t w = 8;
  bool drop_numbers = false;
  uint32_t min_word_chars = 0;
  uint32_t min_sentence_words = 0;
  bool drop_stop_words = false;
  uint32_t verify_k = kDefaultVerifyK;  // 0 = no verification grams
  uint32_t stem_pairs = 0;  // content-stem pairs kept 1 in N (0 = none; core/stem_pairs.h)

  uint64_t max_document_bytes = 32ull << 20;  // larger documents: RESOURCE_EXHAUSTED
  uint64_t max_message_bytes = 64ull << 20;   // gRPC receive/send limit
  uint32_t bulk_window_documents = 4096;  // documents per index write of a bulk stream
  bool pdf_hidden_text = true;  // checks render PDF pages to find hidden text
  bool heavy_revisions = true;  // checks that do not say look for heavy revisions
  // The index's options (storage/index.h), flags named after them: --sync-writes,
  // --store-texts, --block-cache-mb, --write-buffer-mb, --bloom-bits, --background-jobs,
  // --lookup-threads, --postings-shards, --postings-memtables, --compression,
  // --postings-block-kb. Validated when the index opens; path and params are not flags.
  // --block-cache-mb 0 (the default) sizes the cache from the machine: a quarter of physical
  // memory, within [256 MiB, 16 GiB] (BlockCacheBytes()). Checks that find copies read a
  // postings block per matched chunk; the more of the index's hot blocks the cache holds,
  // the fewer are read and decompressed again (docs/performance.md).
  // copsd creates bucketed indexes keeping the top 40 bits of each chunk hash: ~3,000 bytes
  // per 4 KB document against ~4,600 with one key per hash (--bucketed-postings false), and
  // with the filter of stored hashes, checks cost about the same (docs/performance.md).
  IndexOptions index = [] {
    IndexOptions options;
    options.new_index_hash_bits = 40;
    // Checks right after a registration burst read each bucket from two levels and merge
    // it; compacted once idle they cost a fifth less (IndexOptions::idle_compaction_seconds).
    options.idle_compaction_seconds = 60;
    return options;
  }();
  // Lifetimes (server/retention_sweeper.h): the time between sweeps of expired documents
  // and old audit entries (--sweep-interval), and how long audit entries are kept
  // (--audit-retention; 0 = forever). Flags take durations such as 90d, 12h, 30s.
  int64_t sweep_interval_seconds = 60;
  int64_t audit_retention_seconds = int64_t{90} * 86400;
  // Upper bound of the gRPC handler thread pool (threads start as calls need them). A call
  // finding every thread busy is refused by gRPC ("Server Threadpool Exhausted"), whoever
  // makes it: at 16, 40 clients flooding wrong keys on a loaded machine got an admin's call
  // refused. Each client has at most one call in a thread per stream it opens.
  uint32_t threads = 64;
  // Handler threads kept waiting for calls between calls (gRPC's MAX_POLLERS): beyond this
  // many idle, a thread exits when its call ends and the next call starts a new one. At
  // gRPC's default of 2, eight callers in flight made copsd start and end a thread for most
  // calls (thread stacks mapped and unmapped, TLB shootdowns): 2.7 KB copied checks at
  // concurrency 8 cost 0.96-1.24 ms of copsd CPU against 0.62-0.79 ms with 16
  // (docs/performance.md, "Check decisions").
  uint32_t kept_threads = 16;
  uint32_t drain_seconds = 10;  // graceful shutdown: time for calls in flight
  // Read the index into the block cache after starting and after a key rotation
  // (Index::StartWarmingBlockCache), up to kWarmCacheFill of its capacity: a fresh copsd
  // then answers checks that find copies as fast as one that has run a while.
  bool warm_cache = true;
  static constexpr double kWarmCacheFill = 0.9;

  // Overload limits (docs/operations.md, "Limits"). Checks and registrations at work at once
  // (0 = the machine's cores, at least 2, at most threads - 2) and their document bytes
  // (access/admission_control.h); a call finding no room waits at most admission_wait_ms
  // (threads - 2 calls at most work or wait: 2 threads are left to the cheap calls, stats,
  // health, admin), else gets RESOURCE_EXHAUSTED.
  uint32_t max_concurrent_calls = 0;
  uint64_t max_inflight_bytes = 64ull << 20;
  uint32_t admission_wait_ms = 1000;
  // gRPC transport: HTTP/2 streams (calls) open at once on one connection, the memory quota
  // of gRPC's own buffers (received requests not yet handled included; above it gRPC shrinks
  // flow-control windows, refuses new connections and cancels streams), keepalive pings
  // (a peer that does not answer within the time-out is disconnected) and the time a new
  // connection has to finish its HTTP/2 (and TLS) handshake.
  uint32_t max_streams_per_connection = 16;
  uint64_t transport_memory_bytes = 1ull << 30;
  uint32_t keepalive_seconds = 60;
  uint32_t keepalive_timeout_seconds = 20;
  uint32_t handshake_timeout_seconds = 10;
  // Streams (CheckStream, RegisterDocuments; access/stream_watchdog.h): ended after this
  // long without a message, and this long after they opened; 0 = never.
  int64_t stream_idle_seconds = 300;
  int64_t stream_max_age_seconds = 3600;
  // Floors of checkers' check options (access/access_control.h, AccessControlOptions).
  uint32_t checker_min_passage_units = 8;
  uint32_t checker_min_count = 10;

  std::string key_file;  // hashing key file (32 hex digits); default in the data directory
  std::string hash_key;  // hashing key as hex (COPS_HASH_KEY); wins over key_file

  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string auth = "auto";  // auto | on | off (access/transport_security.h)
  bool allow_insecure_remote = false;

  // Scale-out (docs/scale-out.md); both empty = single node, no NATS. --log: registrations go
  // through the registration log at this NATS URL; --follow: a read-only replica of it.
  std::string log_url;
  std::string follow_url;
  std::string primary;  // --follow: where writes go, named in the refusal
  std::string log_stream = "COPS_REGISTRATIONS";
  // JetStream copies of the log (and of the cluster map) when this copsd creates them; an
  // existing stream keeping fewer is refused. Fewer than kSafeLogReplicas only with
  // allow_unreplicated_log (--allow-unreplicated-log): one NATS server's lost store then
  // loses acknowledged registrations.
  int log_replicas = 3;
  bool allow_unreplicated_log = false;
  static constexpr int kSafeLogReplicas = 3;
  std::string log_consumer;   // durable consumer name; empty = derived from host and data dir
  // NATS's own security (replication/jetstream.h, NatsSecurity): --nats-user,
  // --nats-password (better COPS_NATS_PASSWORD), --nats-creds, --nats-nkey, --nats-nkey-seed,
  // --nats-tls-ca, --nats-tls-cert, --nats-tls-key.
  std::string nats_user;
  std::string nats_password;
  std::string nats_creds;
  std::string nats_nkey;
  std::string nats_nkey_seed;
  std::string nats_tls_ca;
  std::string nats_tls_cert;
  std::string nats_tls_key;
  // --cluster-key-file: the cluster key that signs and verifies registration events and
  // cluster-map records (replication/cluster_signature.h); read at parse time into
  // cluster_key (raw bytes). Every node of a cluster needs the same one.
  std::string cluster_key_file;
  std::string cluster_key;
  // Partitions (docs/scale-out.md): 0 = the single-partition log. With --follow, P > 0 makes
  // this node a replica of partition `partition` (-1 = of every partition, a gateway), with
  // ids from the log sequence.
  uint32_t partitions = 0;
  int partition = -1;
  // --route: a router of a partitioned cluster at this NATS URL; checks fan out to the
  // replicas listed in `replicas` ("P=HOST:PORT", repeated), else to the cluster map's.
  std::string route_url;
  std::vector<std::string> replicas;
  uint32_t route_timeout_ms = 10000;  // a fanned-out call's deadline when the caller sets none
  // Node identity between copsd processes (docs/security.md, "A cluster"). A router calls
  // its replicas over TLS trusting node_ca, presenting node_cert/node_key (mutual TLS); a
  // replica believes the callers' identities forwarded by the nodes in trusted_nodes
  // (certificate names or sha256:<fingerprint>, access/forwarded_identity.h).
  std::string node_cert;
  std::string node_key;
  std::string node_ca;
  std::vector<std::string> trusted_nodes;
  // The cluster map (docs/scale-out.md, "The cluster map"): with a node id, a --log or
  // --follow node heartbeats its record into the bucket; --show-cluster prints the map.
  std::string cluster_node_id;
  std::string advertise;      // HOST:PORT in the record; empty = the bound listener
  std::string cluster_bucket = "COPS_CLUSTER";
  uint32_t heartbeat_ms = 1000;  // heartbeat interval; a member is live for 3 of them
  std::string show_cluster_url;  // print the map at this NATS URL and exit

  // The HTTP/JSON API (http/api.h, docs/api.md): off unless http_listen is set. Plain
  // HTTP: a listener off loopback needs --allow-insecure-remote (terminate TLS in front).
  std::string http_listen;
  std::string http_port_file;  // when set, the bound HTTP port is written there once serving
  uint32_t http_threads = 8;                   // connections served at once
  uint32_t http_max_queued_connections = 64;   // more wait; beyond, 503
  uint32_t http_request_timeout_ms = 30000;    // one request's headers and body
  uint32_t http_idle_timeout_ms = 5000;        // a connection's wait for its next request
  uint64_t http_max_body_bytes = 0;            // 0 = max_document_bytes + 1 MiB
  uint32_t http_job_workers = 2;               // asynchronous jobs running at once
  uint32_t http_max_queued_jobs = 64;          // more: 429
  uint32_t http_max_queued_jobs_per_caller = 16;  // of those, one caller's; more: 429
  int64_t http_job_retention_seconds = 3600;   // a finished job's result is kept this long
  uint64_t http_job_results_bytes = 256ull << 20;  // finished jobs' results kept at most
  uint64_t http_idempotency_bytes = 64ull << 20;   // Idempotency-Key replies kept at most
  // Webhooks of HTTP API jobs (http/webhooks.h): the hosts that may be called (HOST[:PORT],
  // "*" = any public host; none = no callbacks), and each delivery's attempts.
  std::vector<std::string> webhook_allow;
  uint32_t webhook_max_attempts = 6;
  uint32_t webhook_first_backoff_ms = 1000;  // doubles after each failed attempt
  uint32_t webhook_timeout_ms = 10000;       // a whole attempt: connect, send, answer

  std::string log_level = "info";  // debug | info | warn | error
  bool log_json = false;

  // Chunking flags given explicitly (by flag, environment or file), by flag name.
  std::set<std::string> explicit_chunking;
};

// Parses argv, the environment and the config file. INVALID_ARGUMENT with the parser's
// message on bad input. `help` is set (and the help text returned in `help_text`) for --help.
absl::StatusOr<ServerConfig> ParseServerConfig(int argc, const char* const* argv, bool* help,
                                               std::string* help_text);

// The NATS credentials and TLS files of the --nats-* flags, for every NATS connection.
NatsSecurity NatsSecurityOf(const ServerConfig& config);

// The parameters to open the index with, given those `recorded` in the data directory
// (std::nullopt for a new index) and the key: the recorded ones when present
// (FAILED_PRECONDITION when an explicit flag or the key contradicts them), else those of the
// flags. The result names key.Id().
absl::StatusOr<ChunkingParams> ResolveChunkingParams(const ServerConfig& config,
                                                     const std::optional<ChunkingParams>& recorded,
                                                     const HashKey& key);

// The admission limits of `config` on a machine of `cores` cores (--max-concurrent-calls 0
// resolved; the waiting calls from --threads).
AdmissionLimits ResolveAdmissionLimits(const ServerConfig& config, unsigned cores);

// The block cache size in bytes for --block-cache-mb `block_cache_mb`, resolving 0 from the
// machine's memory.
uint64_t BlockCacheBytes(uint64_t block_cache_mb);

}  // namespace cops

#endif  // COPS_SERVER_SERVER_CONFIG_H_
