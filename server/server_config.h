#ifndef COPS_SERVER_SERVER_CONFIG_H_
#define COPS_SERVER_SERVER_CONFIG_H_

// copsd's configuration and its data directory.
//
// Precedence: command-line flags > environment (COPS_<FLAG>, e.g. COPS_DATA_DIR) > config file
// (--config FILE: "key = value" lines, '#' comments, or one JSON object; keys are the flag
// names without dashes, e.g. "listen" or "max-document-bytes") > built-in defaults.
//
// Data directory layout:
//   <data-dir>/index/        the RocksDB index (storage/index.h)
//   <data-dir>/hash.key      the secret hashing key, 32 hex digits, mode 0600, generated on
//                            first start unless --key-file / COPS_HASH_KEY give one
//   <data-dir>/params        the chunking parameters the index was created with
//                            (ChunkingParams::Encode(), hex); they win over flags
//   <data-dir>/access/, admin.key   access control (server/access_control.h)
//
// Thread-safety: plain functions and value types, used at start-up.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/hash_key.h"
#include "core/params.h"

namespace cops {

struct ServerConfig {
  std::string config_file;
  std::string data_dir = "./cops-data";
  std::string listen = "127.0.0.1:7411";  // port 0 picks a free port (see port_file)
  std::string port_file;  // when set, the bound port is written there once serving

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

  uint64_t max_document_bytes = 32ull << 20;  // larger documents: RESOURCE_EXHAUSTED
  uint64_t max_message_bytes = 64ull << 20;   // gRPC receive/send limit
  uint32_t bulk_window_documents = 4096;  // documents per index write of a bulk stream
  bool sync_writes = false;  // fsync every registration (power-loss durability)
  bool store_texts = true;   // keep registered documents' bytes (GetDocument content)
  // RocksDB tunables (storage/index.h IndexOptions); the defaults suit a 2-core, few-GB
  // machine. Validated when the index opens.
  // 0 = sized from the machine: a quarter of physical memory, within [256 MiB, 16 GiB]
  // (BlockCacheBytes()). Checks that find copies read a postings block per matched chunk;
  // the more of the index's hot blocks the cache holds, the fewer are read and
  // decompressed again (docs/performance.md).
  uint64_t block_cache_mb = 0;
  uint64_t write_buffer_mb = 64;
  int bloom_bits = 10;
  int background_jobs = 4;
  int lookup_threads = 2;         // threads one check's index lookup may use (1-16)
  uint32_t postings_shards = 2;   // new index: postings column families (1, 2 or 4)
  uint32_t postings_memtables = 8;  // memtables per postings shard's write buffer (1-64)
  std::string compression = "lz4";  // postings: lz4 | zstd | snappy | none
  uint32_t postings_block_kb = 16;  // postings SST data blocks, KiB
  uint32_t threads = 16;     // upper bound of the gRPC handler thread pool
  uint32_t drain_seconds = 10;  // graceful shutdown: time for calls in flight

  std::string key_file;  // hashing key file (32 hex digits); default <data-dir>/hash.key
  std::string hash_key;  // hashing key as hex (COPS_HASH_KEY); wins over key_file

  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string auth = "auto";  // auto | on | off (server/transport_security.h)
  bool allow_insecure_remote = false;

  std::string log_level = "info";  // debug | info | warn | error
  bool log_json = false;

  // Chunking flags given explicitly (by flag, environment or file), by flag name.
  std::set<std::string> explicit_chunking;
};

// Parses argv, the environment and the config file. INVALID_ARGUMENT with the parser's
// message on bad input. `help` is set (and the help text returned in `help_text`) for --help.
absl::StatusOr<ServerConfig> ParseServerConfig(int argc, const char* const* argv, bool* help,
                                               std::string* help_text);

// The hashing key: hash_key, else key_file, else <data-dir>/hash.key, created with OpenSSL
// RAND_bytes (mode 0600) when missing.
absl::StatusOr<HashKey> LoadOrCreateHashKey(const ServerConfig& config);

// The parameters to open the index with: those recorded in <data-dir>/params when present
// (FAILED_PRECONDITION when an explicit flag or the key contradicts them), else those of the
// flags. `*is_new` tells whether RecordParams() must be called once the index is open.
absl::StatusOr<ChunkingParams> ResolveChunkingParams(const ServerConfig& config,
                                                     const HashKey& key, bool* is_new);
// The block cache size of `config` in bytes, resolving 0 from the machine's memory.
uint64_t BlockCacheBytes(const ServerConfig& config);

absl::Status RecordParams(const ServerConfig& config, const ChunkingParams& params);

}  // namespace cops

#endif  // COPS_SERVER_SERVER_CONFIG_H_
