#include "server/server_config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "CLI/CLI.hpp"
#include "core/status_macros.h"
#include "core/stem_pairs.h"
#include "core/time_format.h"
#include "nlohmann/json.hpp"
#include "replication/cluster_map.h"
#include "replication/cluster_signature.h"
#include "storage/file_system.h"

namespace cops {
namespace {

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

// How a flag reaches its field: adds the option `--name` to `app`, bound to a field of `c`.
using Bind = std::function<CLI::Option*(CLI::App& app, const std::string& flag,
                                        const std::string& help, ServerConfig& c)>;
// What else the option checks or how it splits its values.
using Tune = std::function<void(CLI::Option*)>;

// A value of any type CLI11 reads, shown with its default in --help.
template <typename T>
Bind Value(T ServerConfig::*field) {
  return [field](CLI::App& app, const std::string& flag, const std::string& help, ServerConfig& c) {
    return app.add_option(flag, c.*field, help)->capture_default_str();
  };
}
template <typename T>
Bind Value(IndexOptions ServerConfig::*index, T IndexOptions::*field) {
  return [index, field](CLI::App& app, const std::string& flag, const std::string& help,
                        ServerConfig& c) {
    return app.add_option(flag, c.*index.*field, help)->capture_default_str();
  };
}
// A flag without a value: on when given.
Bind Switch(bool ServerConfig::*field) {
  return [field](CLI::App& app, const std::string& flag, const std::string& help, ServerConfig& c) {
    return app.add_flag(flag, c.*field, help);
  };
}
Bind Switch(IndexOptions ServerConfig::*index, bool IndexOptions::*field) {
  return [index, field](CLI::App& app, const std::string& flag, const std::string& help,
                        ServerConfig& c) { return app.add_flag(flag, c.*index.*field, help); };
}
// A size given in MiB, kept in bytes.
Bind MibInto(const std::function<uint64_t&(ServerConfig&)>& bytes) {
  return [bytes](CLI::App& app, const std::string& flag, const std::string& help, ServerConfig& c) {
    uint64_t* field = &bytes(c);
    return app
        .add_option_function<uint64_t>(
            flag, [field](uint64_t mib) { *field = mib << 20; }, help)
        ->default_str(std::to_string(*field >> 20));
  };
}
Bind Mib(uint64_t ServerConfig::*field) {
  return MibInto([field](ServerConfig& c) -> uint64_t& { return c.*field; });
}
Bind Mib(IndexOptions ServerConfig::*index, uint64_t IndexOptions::*field) {
  return MibInto([index, field](ServerConfig& c) -> uint64_t& { return c.*index.*field; });
}
// --block-cache-mb: 0 sizes the cache from the machine (BlockCacheBytes).
Bind BlockCacheMib() {
  return [](CLI::App& app, const std::string& flag, const std::string& help, ServerConfig& c) {
    c.index.block_cache_bytes = BlockCacheBytes(0);
    return app
        .add_option_function<uint64_t>(
            flag, [&c](uint64_t mib) { c.index.block_cache_bytes = BlockCacheBytes(mib); }, help)
        ->default_str("0");
  };
}
// A duration ("90d", "12h", "30s"), kept in seconds.
Bind Duration(int64_t ServerConfig::*seconds, const std::string& default_text) {
  return [seconds, default_text](CLI::App& app, const std::string& flag, const std::string& help,
                                 ServerConfig& c) {
    int64_t* field = &(c.*seconds);
    return app
        .add_option_function<std::string>(
            flag,
            [flag, field](const std::string& text) {
              absl::StatusOr<int64_t> parsed = ParseDurationSeconds(text);
              if (!parsed.ok()) {
                throw CLI::ValidationError(flag, std::string(parsed.status().message()));
              }
              *field = *parsed;
            },
            help)
        ->default_str(default_text);
  };
}

Tune Checked(const CLI::Validator& validator) {
  return [validator](CLI::Option* o) { o->check(validator); };
}
Tune Delimited(char delimiter) {
  return [delimiter](CLI::Option* o) { o->delimiter(delimiter); };
}
// A repeatable option that takes one value per occurrence.
Tune OneValueEach() {
  return [](CLI::Option* o) { o->allow_extra_args(false); };
}

constexpr bool kChunking = true;  // a chunking parameter: recorded by a new index

// One flag: its name (also its config-file key and, as COPS_<NAME>, its environment
// variable), its help, its field and checks. Parsing, --help and the config file's keys all
// come from this one table; a new flag is one row.
struct Flag {
  std::string name;
  std::string help;
  Bind bind;
  Tune tune = nullptr;
  bool chunking = false;
};

// In the order of --help.
const std::vector<Flag>& Flags() {
  static const std::vector<Flag>* const kFlags = new std::vector<Flag>{
      {"data-dir", "Data directory (index, hashing key, access store)",
       Value(&ServerConfig::data_dir)},
      {"listen", "Listen address HOST:PORT (port 0: any free port)", Value(&ServerConfig::listen)},
      {"port-file", "Write the bound port to this file once serving",
       Value(&ServerConfig::port_file)},
      {"metrics-listen", "Serve Prometheus metrics at http://HOST:PORT/metrics (empty: off)",
       Value(&ServerConfig::metrics_listen)},
      {"unit", "New index: unit word|sentence|paragraph", Value(&ServerConfig::unit), nullptr,
       kChunking},
      {"strategy", "New index: chunking one_unit|non_overlapping|overlapping|hashed_breakpoints",
       Value(&ServerConfig::strategy), nullptr, kChunking},
      {"k", "New index: units per chunk (breakpoint modulus for hashed_breakpoints)",
       Value(&ServerConfig::k), nullptr, kChunking},
      {"selection", "New index: chunk selection all|mod_p|winnowing",
       Value(&ServerConfig::selection), nullptr, kChunking},
      {"p", "New index: modulus of mod_p selection", Value(&ServerConfig::p), nullptr, kChunking},
      {"w", "New index: winnowing window in chunks", Value(&ServerConfig::w), nullptr, kChunking},
      {"drop-numbers", "New index: drop number words", Switch(&ServerConfig::drop_numbers), nullptr,
       kChunking},
      {"min-word-chars", "New index: drop shorter words (0 = keep)",
       Value(&ServerConfig::min_word_chars), nullptr, kChunking},
      {"min-sentence-words", "New index: drop sentences with fewer words (0 = keep)",
       Value(&ServerConfig::min_sentence_words), nullptr, kChunking},
      {"drop-stop-words", "New index: drop English stop words",
       Switch(&ServerConfig::drop_stop_words), nullptr, kChunking},
      {"verify-k",
       "New index: words per verification gram (complete fingerprint of each document, 2 bytes per "
       "word; 0 = none, decide on the sampled chunks alone)",
       Value(&ServerConfig::verify_k), nullptr, kChunking},
      {"stem-pairs",
       "New index: keep the content-stem pairs whose keyed hash is 0 mod N (1 = every pair; 0 = "
       "none), so that checks find heavy revisions by the rare pairs they share "
       "(docs/accuracy.md)",
       Value(&ServerConfig::stem_pairs), Checked(CLI::Range(0u, 64u)), kChunking},
      {"max-document-bytes", "Largest document accepted, bytes",
       Value(&ServerConfig::max_document_bytes)},
      {"max-message-bytes", "Largest gRPC message, bytes", Value(&ServerConfig::max_message_bytes)},
      {"pdf-hidden-text",
       "Checks render each PDF page to report hidden text (white, invisible, painted over, 1 pt): "
       "several times the PDF's conversion cost; --pdf-hidden-text=false keeps only the other "
       "formats' (HTML, DOCX, LaTeX, ODT but its named styles; docs/converters.md)",
       Switch(&ServerConfig::pdf_hidden_text)},
      {"heavy-revisions",
       "Checks that do not say look for heavy revisions too: a registered text reworded "
       "throughout, its order kept (docs/accuracy.md). On by default; "
       "--heavy-revisions=false for a registry of texts made from one template, which may "
       "be flagged as each other's",
       Switch(&ServerConfig::heavy_revisions)},
      {"bulk-window-documents",
       "Documents of a bulk stream written to the index together (1-65536; 16 MiB at most)",
       Value(&ServerConfig::bulk_window_documents), Checked(CLI::Range(1u, 65536u))},
      {"sync-writes", "fsync every registration",
       Switch(&ServerConfig::index, &IndexOptions::sync_writes)},
      {"min-free-disk-mb",
       "Free space, MiB, writes leave on the data directory's file system: below it writes are "
       "refused (RESOURCE_EXHAUSTED) and resume once space is freed; reads go on (0 = none)",
       Value(&ServerConfig::index, &IndexOptions::min_free_disk_mb)},
      {"store-texts", "Keep registered documents' bytes (true|false)",
       Value(&ServerConfig::index, &IndexOptions::store_texts)},
      {"block-cache-mb",
       "RocksDB block cache for data blocks, MiB (0 = a quarter of physical memory, 256 MiB to 16 "
       "GiB)",
       BlockCacheMib()},
      {"block-cache",
       "Block cache implementation: lru|hyper-clock (RocksDB's HyperClockCache, experimental in "
       "RocksDB 7.8)",
       Value(&ServerConfig::index, &IndexOptions::block_cache),
       Checked(CLI::IsMember({"lru", "hyper-clock"}))},
      {"write-buffer-mb",
       "RocksDB write buffer of each postings shard (and at most of the others), MiB",
       Mib(&ServerConfig::index, &IndexOptions::write_buffer_bytes)},
      {"postings-memtables",
       "Memtables each postings shard's write buffer is cut into, flushed together (1-64)",
       Value(&ServerConfig::index, &IndexOptions::postings_memtables),
       Checked(CLI::Range(1u, 64u))},
      {"bucketed-postings",
       "A new index keeps its postings in buckets by hash prefix (true|false; false: one key "
       "per hash, ~1.5x the bytes per document; docs/performance.md)",
       Value(&ServerConfig::index, &IndexOptions::bucketed_postings)},
      {"expected-documents", "Documents a new bucketed index is sized for (its bucket count)",
       Value(&ServerConfig::index, &IndexOptions::expected_documents)},
      {"postings-hash-bits",
       "Top bits of each chunk hash a new bucketed index keeps (0 = 40; 64: all, ~3 bytes more "
       "per posting): a false candidate, verified away, per ~2^bits / postings looked-up chunks; "
       "on an existing index 0 or the bits it was built with (docs/storage-format.md)",
       Value(&ServerConfig::index, &IndexOptions::postings_hash_bits),
       Checked(CLI::Range(0u, 64u))},
      {"hash-filter-bits",
       "Bucketed postings: bits per stored hash of the in-memory filter a check asks before "
       "reading a bucket, 0-32 (0 = none; 10: ~1% of hashes stored nowhere still read one)",
       Value(&ServerConfig::index, &IndexOptions::hash_filter_bits), Checked(CLI::Range(0u, 32u))},
      {"bloom-bits", "Bloom filter bits per chunk key, 0-30 (0 = none)",
       Value(&ServerConfig::index, &IndexOptions::bloom_bits_per_key)},
      {"idle-compaction-seconds",
       "After this many seconds without a write, compact the postings into one sorted run per "
       "shard if 1% or more of them lie above it (a copied check then costs a fifth less; "
       "docs/performance.md); 0 = never",
       Value(&ServerConfig::index, &IndexOptions::idle_compaction_seconds)},
      {"background-jobs", "RocksDB flush and compaction threads",
       Value(&ServerConfig::index, &IndexOptions::background_jobs)},
      {"lookup-threads", "Threads one check's index lookup may use, the handler's included (1-16)",
       Value(&ServerConfig::index, &IndexOptions::lookup_threads), Checked(CLI::Range(1, 16))},
      {"postings-shards",
       "New index: postings column families, 1, 2 or 4 (an existing index keeps its own)",
       Value(&ServerConfig::index, &IndexOptions::postings_shards),
       Checked(CLI::IsMember({1u, 2u, 4u}))},
      {"compression", "Compression of the postings: lz4|zstd|snappy|none",
       Value(&ServerConfig::index, &IndexOptions::postings_compression)},
      {"postings-block-kb", "Block size, KiB, of new per-hash postings files (1-256; buckets: 4)",
       Value(&ServerConfig::index, &IndexOptions::postings_block_kb)},
      {"sweep-interval",
       "Time between sweeps removing expired documents and old audit entries (e.g. 1m); expired "
       "documents are never reported whatever it is",
       Duration(&ServerConfig::sweep_interval_seconds, "1m")},
      {"audit-retention",
       "How long audit entries (who matched which document) are kept, e.g. 90d (0s = forever)",
       Duration(&ServerConfig::audit_retention_seconds, "90d")},
      {"mmap-reads", "Read the index files through mmap (uncompressed blocks are read in place)",
       Switch(&ServerConfig::index, &IndexOptions::mmap_reads)},
      {"threads", "Most handler threads", Value(&ServerConfig::threads)},
      {"kept-threads", "Idle handler threads kept for the next calls (at most --threads)",
       Value(&ServerConfig::kept_threads), Checked(CLI::Range(1u, 65536u))},
      {"drain-seconds", "Graceful shutdown: time for calls in flight",
       Value(&ServerConfig::drain_seconds)},
      {"warm-cache",
       "Read the index into the block cache after starting and after compactions that rewrite "
       "the postings, at low priority (true|false)",
       Value(&ServerConfig::warm_cache)},
      {"cache-flushed-blocks",
       "Put the postings, grams and records a memtable flush writes into the block cache, for "
       "checks right after registrations (true|false)",
       Value(&ServerConfig::index, &IndexOptions::cache_flushed_blocks)},
      {"max-concurrent-calls",
       "Checks and registrations at work at once (0 = 4 x the CPU cores, 2 to threads - 2); "
       "more wait, then get RESOURCE_EXHAUSTED",
       Value(&ServerConfig::max_concurrent_calls)},
      {"max-inflight-bytes",
       "Document bytes of the checks and registrations at work at once (a larger document runs "
       "alone)",
       Value(&ServerConfig::max_inflight_bytes), Checked(CLI::PositiveNumber)},
      {"admission-wait-ms",
       "Longest wait of a check or registration for room before RESOURCE_EXHAUSTED",
       Value(&ServerConfig::admission_wait_ms)},
      {"stream-idle-timeout",
       "A CheckStream or RegisterDocuments stream without a message this long is ended (0s = "
       "never)",
       Duration(&ServerConfig::stream_idle_seconds, "5m")},
      {"stream-max-age", "A stream open this long is ended, busy or not (0s = never)",
       Duration(&ServerConfig::stream_max_age_seconds, "1h")},
      {"checker-min-passage-units",
       "Checkers' checks use min_passage_units of at least this (spans of fewer words would "
       "rebuild registered text)",
       Value(&ServerConfig::checker_min_passage_units)},
      {"checker-min-count", "Checkers' checks use min_count of at least this",
       Value(&ServerConfig::checker_min_count)},
      {"max-streams-per-connection", "Calls open at once on one client connection (HTTP/2 streams)",
       Value(&ServerConfig::max_streams_per_connection), Checked(CLI::PositiveNumber)},
      {"transport-memory-mb",
       "Memory quota of gRPC's buffers (received requests not yet handled), MiB",
       Mib(&ServerConfig::transport_memory_bytes), Checked(CLI::PositiveNumber)},
      {"keepalive-seconds", "Ping a connection after this long without traffic",
       Value(&ServerConfig::keepalive_seconds), Checked(CLI::PositiveNumber)},
      {"keepalive-timeout-seconds",
       "Close a connection whose ping is not answered within this time",
       Value(&ServerConfig::keepalive_timeout_seconds), Checked(CLI::PositiveNumber)},
      {"handshake-timeout-seconds",
       "Close a new connection that has not finished its handshake (TLS, HTTP/2) in this time",
       Value(&ServerConfig::handshake_timeout_seconds), Checked(CLI::PositiveNumber)},
      {"key-file", "Hashing key file, 32 hex digits (default <data-dir>/hash.key)",
       Value(&ServerConfig::key_file)},
      {"hash-key", "Hashing key as 32 hex digits (prefer COPS_HASH_KEY)",
       Value(&ServerConfig::hash_key)},
      {"tls-cert", "Serve TLS with this certificate chain (PEM)", Value(&ServerConfig::tls_cert)},
      {"tls-key", "Private key of --tls-cert (PEM)", Value(&ServerConfig::tls_key)},
      {"tls-client-ca", "Require client certificates signed by this CA",
       Value(&ServerConfig::tls_client_ca)},
      {"auth", "Authentication auto|on|off (auto: off on loopback without --tls-client-ca only)",
       Value(&ServerConfig::auth)},
      {"allow-insecure-remote", "Allow a non-loopback listener without TLS or authentication",
       Switch(&ServerConfig::allow_insecure_remote)},
      {"log",
       "Scale-out primary: registrations go through the registration log on NATS JetStream at this "
       "URL (docs/scale-out.md); empty: single node",
       Value(&ServerConfig::log_url)},
      {"follow", "Read-only replica kept current from the registration log at this NATS URL",
       Value(&ServerConfig::follow_url)},
      {"primary", "With --follow: the primary's address, named when a write is refused",
       Value(&ServerConfig::primary)},
      {"log-stream", "JetStream stream of the registration log", Value(&ServerConfig::log_stream)},
      {"log-replicas",
       "Copies JetStream keeps of the log, when this copsd creates the stream (1, 3, 5)",
       Value(&ServerConfig::log_replicas), Checked(CLI::Range(1, 5))},
      {"allow-unreplicated-log",
       "Accept --log-replicas below 3 (one NATS server: acknowledged events die with its store)",
       Switch(&ServerConfig::allow_unreplicated_log)},
      {"log-consumer",
       "Prefix of this node's consumers of the log, each named PREFIX~N (default: from the "
       "host and data directory)",
       Value(&ServerConfig::log_consumer)},
      {"nats-user", "NATS user name (with --nats-password)", Value(&ServerConfig::nats_user)},
      {"nats-password", "NATS password (prefer COPS_NATS_PASSWORD)",
       Value(&ServerConfig::nats_password)},
      {"nats-creds", "NATS credentials file (.creds: user JWT and NKey seed)",
       Value(&ServerConfig::nats_creds)},
      {"nats-nkey", "NATS user's public NKey (with --nats-nkey-seed)",
       Value(&ServerConfig::nats_nkey)},
      {"nats-nkey-seed", "File holding the seed of --nats-nkey",
       Value(&ServerConfig::nats_nkey_seed)},
      {"nats-tls-ca", "Connect to NATS over TLS, trusting this CA bundle (PEM)",
       Value(&ServerConfig::nats_tls_ca)},
      {"nats-tls-cert", "Client certificate (PEM) for NATS's TLS",
       Value(&ServerConfig::nats_tls_cert)},
      {"nats-tls-key", "Private key of --nats-tls-cert (PEM)", Value(&ServerConfig::nats_tls_key)},
      {"cluster-key-file",
       "Sign registration events and cluster-map records with this cluster key (hex, 32+ bytes; "
       "every node the same) and believe only those signed with it",
       Value(&ServerConfig::cluster_key_file)},
      {"partitions", "Partitions of the cluster (docs/scale-out.md); 0 = the single-partition log",
       Value(&ServerConfig::partitions)},
      {"partition",
       "With --follow and --partitions: the partition this replica serves (default: all)",
       Value(&ServerConfig::partition)},
      {"route",
       "Router of a partitioned cluster whose registration log is at this NATS URL: checks fan out "
       "to one replica per partition, registrations go to the log",
       Value(&ServerConfig::route_url)},
      {"replica",
       "With --route: a replica, PARTITION=HOST:PORT (repeat for each replica); none: the replicas "
       "live in the cluster map (--cluster-bucket)",
       Value(&ServerConfig::replicas)},
      {"route-timeout-ms", "With --route: deadline of a fanned-out call when the caller gives none",
       Value(&ServerConfig::route_timeout_ms), Checked(CLI::PositiveNumber)},
      {"node-cert", "With --route: client certificate (PEM) presented to the replicas (mutual TLS)",
       Value(&ServerConfig::node_cert)},
      {"node-key", "Private key of --node-cert (PEM)", Value(&ServerConfig::node_key)},
      {"node-ca", "With --route: call the replicas over TLS, trusting this CA bundle (PEM)",
       Value(&ServerConfig::node_ca)},
      {"trusted-nodes",
       "Nodes whose forwarded caller identities this copsd believes: certificate names (CN/SAN) or "
       "sha256:<fingerprint> (repeat or comma-separate; needs --tls-client-ca)",
       Value(&ServerConfig::trusted_nodes), Delimited(',')},
      {"cluster-node-id",
       "With --log or --follow: join the cluster map under this name (A-Z a-z 0-9 _ -)",
       Value(&ServerConfig::cluster_node_id)},
      {"advertise",
       "With --cluster-node-id: the HOST:PORT routers reach this node at (default: the listener)",
       Value(&ServerConfig::advertise)},
      {"cluster-bucket", "JetStream key-value bucket of the cluster map",
       Value(&ServerConfig::cluster_bucket)},
      {"heartbeat-ms",
       "Cluster map heartbeat interval; a member is live for 3 intervals after its last",
       Value(&ServerConfig::heartbeat_ms), Checked(CLI::Range(10u, 60000u))},
      {"show-cluster", "Print the members of the cluster map at this NATS URL and exit",
       Value(&ServerConfig::show_cluster_url)},
      {"http-listen", "Serve the HTTP/JSON API at HOST:PORT (docs/api.md; empty: off)",
       Value(&ServerConfig::http_listen)},
      {"http-port-file", "Write the bound HTTP port to this file once serving",
       Value(&ServerConfig::http_port_file)},
      {"http-threads", "HTTP connections served at once", Value(&ServerConfig::http_threads),
       Checked(CLI::Range(1u, 1024u))},
      {"http-max-queued-connections", "HTTP connections waiting for a thread; beyond, 503",
       Value(&ServerConfig::http_max_queued_connections)},
      {"http-request-timeout-ms",
       "Time an HTTP request's headers and body have to arrive after its first byte",
       Value(&ServerConfig::http_request_timeout_ms), Checked(CLI::PositiveNumber)},
      {"http-idle-timeout-ms", "Time an HTTP connection waits for its next request",
       Value(&ServerConfig::http_idle_timeout_ms), Checked(CLI::PositiveNumber)},
      {"http-max-body-bytes",
       "Largest HTTP request body (0: --max-document-bytes + 1 MiB); larger: 413",
       Value(&ServerConfig::http_max_body_bytes)},
      {"http-job-workers", "HTTP API jobs running at once", Value(&ServerConfig::http_job_workers),
       Checked(CLI::Range(1u, 256u))},
      {"http-max-queued-jobs", "HTTP API jobs waiting to run; beyond, 429",
       Value(&ServerConfig::http_max_queued_jobs)},
      {"http-max-queued-jobs-per-caller",
       "Of those, one caller's (API key or certificate); beyond, 429 for that caller only",
       Value(&ServerConfig::http_max_queued_jobs_per_caller), Checked(CLI::PositiveNumber)},
      {"http-job-retention", "How long a finished HTTP API job's result is kept, e.g. 1h",
       Duration(&ServerConfig::http_job_retention_seconds, "1h")},
      {"http-job-results-mb",
       "Finished HTTP API jobs' results kept in at most this much memory, MiB; beyond, the "
       "oldest are forgotten first",
       Mib(&ServerConfig::http_job_results_bytes), Checked(CLI::PositiveNumber)},
      {"http-idempotency-mb",
       "Replies kept for Idempotency-Key retries in at most this much memory, MiB; beyond, the "
       "oldest are forgotten first",
       Mib(&ServerConfig::http_idempotency_bytes), Checked(CLI::PositiveNumber)},
      {"webhook-allow",
       "A host HTTP API jobs may call back, HOST[:PORT] (repeat for each; '*' = any host with "
       "public addresses); loopback, private and link-local addresses only when named",
       Value(&ServerConfig::webhook_allow), OneValueEach()},
      {"webhook-max-attempts", "Attempts of a webhook delivery, the first included",
       Value(&ServerConfig::webhook_max_attempts), Checked(CLI::Range(1u, 30u))},
      {"webhook-first-backoff-ms",
       "Wait before a webhook delivery's second attempt; it doubles after each",
       Value(&ServerConfig::webhook_first_backoff_ms), Checked(CLI::Range(1u, 3600000u))},
      {"webhook-timeout-ms",
       "Time a webhook receiver has to accept the connection, take the body and answer",
       Value(&ServerConfig::webhook_timeout_ms), Checked(CLI::Range(1u, 600000u))},
      {"log-level", "debug|info|warn|error", Value(&ServerConfig::log_level)},
      {"log-json", "Log JSON lines instead of key=value", Switch(&ServerConfig::log_json)},
  };
  return *kFlags;
}

// Rules between flags, checked after parsing: each names what is wrong when `broken`.
struct FlagRule {
  bool (*broken)(const ServerConfig& c);
  const char* message;
};

int Roles(const ServerConfig& c) {
  return !c.log_url.empty() + !c.follow_url.empty() + !c.route_url.empty();
}

const FlagRule kFlagRules[] = {
    {[](const ServerConfig& c) { return Roles(c) > 1; },
     "--log, --follow and --route exclude each other"},
    {[](const ServerConfig& c) { return c.partitions > 0 && !c.log_url.empty(); },
     "--log takes no --partitions: with partitions, register through a copsd --route"},
    {[](const ServerConfig& c) { return c.partitions > 0 && Roles(c) == 0; },
     "--partitions needs --follow or --route"},
    {[](const ServerConfig& c) { return !c.route_url.empty() && c.partitions == 0; },
     "--route needs --partitions"},
    {[](const ServerConfig& c) {
       return c.partition >= 0 &&
              (c.follow_url.empty() || c.partition >= static_cast<int>(c.partitions));
     },
     "--partition needs --follow and --partitions greater than it"},
    {[](const ServerConfig& c) { return !c.replicas.empty() && c.route_url.empty(); },
     "--replica needs --route"},
    {[](const ServerConfig& c) {
       return (!c.node_cert.empty() || !c.node_key.empty() || !c.node_ca.empty()) &&
              c.route_url.empty();
     },
     "--node-cert, --node-key and --node-ca need --route"},
    {[](const ServerConfig& c) { return c.node_cert.empty() != c.node_key.empty(); },
     "--node-cert and --node-key go together"},
    {[](const ServerConfig& c) { return !c.node_cert.empty() && c.node_ca.empty(); },
     "--node-cert needs --node-ca (the replicas' CA)"},
    {[](const ServerConfig& c) { return !c.trusted_nodes.empty() && c.tls_client_ca.empty(); },
     "--trusted-nodes needs --tls-client-ca: nodes are known by verified client certificates"},
    {[](const ServerConfig& c) {
       return !c.cluster_node_id.empty() && c.log_url.empty() && c.follow_url.empty();
     },
     "--cluster-node-id needs --log or --follow"},
};

// Sets the options of the config file that neither a flag nor the environment set.
absl::Status ApplyConfigFile(CLI::App& app, const std::string& path) {
  COPS_ASSIGN_OR_RETURN(auto file, ReadConfigFile(path));
  for (auto& [raw_key, value] : file) {
    std::string key = raw_key;
    std::replace(key.begin(), key.end(), '_', '-');
    CLI::Option* opt = app.get_option_no_throw("--" + key);
    if (opt == nullptr || key == "config") {
      std::string message = "config file " + path;
      message.append(": unknown key '").append(raw_key).append("'");
      return absl::InvalidArgumentError(message);
    }
    if (opt->count() > 0) continue;  // a flag or the environment wins
    try {
      opt->add_result(value);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      std::string message = "config file " + path;
      message.append(": ").append(raw_key).append(": ").append(e.what());
      return absl::InvalidArgumentError(message);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServerConfig> ParseServerConfig(int argc, const char* const* argv, bool* help,
                                               std::string* help_text) {
  ServerConfig c;
  CLI::App app("copsd: the COPS copy-detection server", "copsd");
  app.add_option("--config", c.config_file,
                 "Config file: key = value lines or a JSON object (flags and COPS_* win)")
      ->envname("COPS_CONFIG");
  for (const Flag& flag : Flags()) {
    CLI::Option* option = flag.bind(app, "--" + flag.name, flag.help, c);
    option->envname(EnvName(flag.name));
    if (flag.tune != nullptr) flag.tune(option);
  }
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
  if (!c.config_file.empty()) COPS_RETURN_IF_ERROR(ApplyConfigFile(app, c.config_file));
  for (const Flag& flag : Flags()) {
    if (flag.chunking && app.get_option("--" + flag.name)->count() > 0) {
      c.explicit_chunking.insert(flag.name);
    }
  }
  for (const FlagRule& rule : kFlagRules) {
    if (rule.broken(c)) return absl::InvalidArgumentError(rule.message);
  }
  if (!c.cluster_key_file.empty()) {
    COPS_ASSIGN_OR_RETURN(c.cluster_key, ReadClusterKey(c.cluster_key_file));
  }
  if (!c.cluster_node_id.empty()) COPS_RETURN_IF_ERROR(ValidateNodeId(c.cluster_node_id));
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
  if (given("stem-pairs")) {
    p.stem_pairs = config.stem_pairs;
    p.stem_version = p.stem_pairs != 0 ? kStemPairsVersion : 0;
  }
  // Verification grams are word grams: an index of other units is created without them.
  if (is_new && p.unit != UnitKind::kWord && !config.explicit_chunking.count("verify-k")) {
    p.verify_k = 0;
  }
  if (is_new && p.verify_k == 0) p.dense_chunks = 0;  // dense storage needs verification
  p.key_id = key.Id();
  if (!is_new && !(p == base)) {
    return absl::FailedPreconditionError(
        "the index in " + config.data_dir + " was created with other chunking parameters (" +
        p.DiffWith(base) + "); drop the conflicting flags to use it as it is: " + base.Describe());
  }
  COPS_RETURN_IF_ERROR(p.Validate());
  return p;
}

AdmissionLimits ResolveAdmissionLimits(const ServerConfig& config, unsigned cores) {
  // Two handler threads are left to the cheap calls (stats, health, admin): checks and
  // registrations, at work or waiting, take at most the others.
  const uint32_t usable = config.threads > 3 ? config.threads - 2 : 1;
  AdmissionLimits limits;
  // Four calls a core: a check of a few KB is short, and with one a core the callers beyond
  // took turns through a futex hand-off each (a mail gateway's 8 streams on 2 cores: copsd
  // 0.64-0.87 ms a copied message against 0.49-0.56 with 8 at work; docs/performance.md).
  // Memory stays bounded by the calls' document bytes (max_inflight_bytes).
  limits.max_calls = config.max_concurrent_calls != 0
                         ? config.max_concurrent_calls
                         : std::min<uint32_t>(std::max<uint32_t>(4 * cores, 2), usable);
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
