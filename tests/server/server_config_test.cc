#include "server/server_config.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/stem_pairs.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

class ServerConfigTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("COPS_LISTEN");
    unsetenv("COPS_K");
  }
  absl::StatusOr<ServerConfig> Parse(std::vector<std::string> args) {
    args.insert(args.begin(), "copsd");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    bool help = false;
    std::string text;
    return ParseServerConfig(static_cast<int>(argv.size()), argv.data(), &help, &text);
  }
  testing::TempDir tmp_{"server_config"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(ServerConfigTest, FlagsBeatEnvironmentWhichBeatsTheConfigFile) {
  const std::string file = (dir_ / "copsd.conf").string();
  std::ofstream(file) << "# comment\nlisten = 127.0.0.1:9000\nk = 7\nmax_document_bytes = 1234\n";
  absl::StatusOr<ServerConfig> c = Parse({"--config", file});
  ASSERT_OK(c);
  EXPECT_EQ(c->listen, "127.0.0.1:9000");
  EXPECT_EQ(c->k, 7u);
  EXPECT_EQ(c->max_document_bytes, 1234u);
  EXPECT_TRUE(c->explicit_chunking.count("k"));

  setenv("COPS_LISTEN", "127.0.0.1:9001", 1);
  c = Parse({"--config", file});
  ASSERT_OK(c);
  EXPECT_EQ(c->listen, "127.0.0.1:9001");

  c = Parse({"--config", file, "--listen", "127.0.0.1:9002"});
  ASSERT_OK(c);
  EXPECT_EQ(c->listen, "127.0.0.1:9002");
  EXPECT_EQ(c->k, 7u);
}

TEST_F(ServerConfigTest, JsonConfigAndUnknownKeys) {
  const std::string file = (dir_ / "copsd.json").string();
  std::ofstream(file) << R"({"data-dir": "/tmp/x", "sync-writes": true, "w": 12})";
  absl::StatusOr<ServerConfig> c = Parse({"--config", file});
  ASSERT_OK(c);
  EXPECT_EQ(c->data_dir, "/tmp/x");
  EXPECT_TRUE(c->index.sync_writes);
  EXPECT_EQ(c->w, 12u);
  std::ofstream(file, std::ios::trunc) << "lisen = 1\n";
  EXPECT_EQ(Parse({"--config", file}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Parse({"--no-such-flag"}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ServerConfigTest, RocksDbTunablesComeFromFlagsEnvironmentAndFile) {
  absl::StatusOr<ServerConfig> c = Parse({});
  ASSERT_OK(c);
  // The block cache is sized from the machine.
  const uint64_t physical = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGE_SIZE));
  EXPECT_EQ(BlockCacheBytes(0), std::clamp<uint64_t>(physical / 4, 256ull << 20, 16ull << 30));
  EXPECT_EQ(c->index.block_cache_bytes, BlockCacheBytes(0));
  EXPECT_EQ(c->index.write_buffer_bytes, 64u << 20);
  EXPECT_EQ(c->index.bloom_bits_per_key, 10);
  EXPECT_EQ(c->index.background_jobs, 4);
  EXPECT_EQ(c->index.postings_compression, "lz4");
  EXPECT_EQ(c->index.lookup_threads, 2);
  EXPECT_EQ(c->index.postings_shards, 2u);
  EXPECT_EQ(c->index.postings_memtables, 8u);
  EXPECT_EQ(c->index.postings_block_kb, 16u);
  EXPECT_FALSE(c->index.sync_writes);
  EXPECT_TRUE(c->index.store_texts);
  // A new index: bucketed, the top 40 bits of each hash; an existing one keeps its own.
  EXPECT_TRUE(c->index.bucketed_postings);
  EXPECT_EQ(c->index.postings_hash_bits, 0u);
  EXPECT_EQ(c->index.new_index_hash_bits, 40u);
  EXPECT_EQ(c->index.hash_filter_bits, 10u);
  const std::string file = (dir_ / "tunables.conf").string();
  std::ofstream(file) << "block-cache-mb = 32\ncompression = zstd\nstore_texts = false\n";
  setenv("COPS_BLOOM_BITS", "14", 1);
  c = Parse({"--config", file, "--write-buffer-mb", "16", "--background-jobs", "2",
             "--lookup-threads", "1", "--postings-shards", "4",
             "--postings-memtables", "16", "--postings-hash-bits", "40"});
  unsetenv("COPS_BLOOM_BITS");
  ASSERT_OK(c);
  EXPECT_EQ(c->index.block_cache_bytes, 32ull << 20);
  EXPECT_EQ(c->index.postings_compression, "zstd");
  EXPECT_FALSE(c->index.store_texts);
  EXPECT_EQ(c->index.bloom_bits_per_key, 14);
  EXPECT_EQ(c->index.write_buffer_bytes, 16u << 20);
  EXPECT_EQ(c->index.background_jobs, 2);
  EXPECT_EQ(c->index.lookup_threads, 1);
  EXPECT_EQ(c->index.postings_shards, 4u);
  EXPECT_EQ(c->index.postings_memtables, 16u);
  EXPECT_EQ(c->index.postings_hash_bits, 40u);
  EXPECT_EQ(Parse({"--postings-hash-bits", "65"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Parse({"--postings-shards", "3"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Parse({"--lookup-threads", "0"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Parse({"--postings-memtables", "0"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Parse({"--postings-memtables", "65"}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ServerConfigTest, BulkWindowHasADefaultAndARange) {
  absl::StatusOr<ServerConfig> c = Parse({});
  ASSERT_OK(c);
  EXPECT_EQ(c->bulk_window_documents, 4096u);
  c = Parse({"--bulk-window-documents", "64"});
  ASSERT_OK(c);
  EXPECT_EQ(c->bulk_window_documents, 64u);
  for (const char* bad : {"0", "65537"}) {
    c = Parse({"--bulk-window-documents", bad});
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(ServerConfigTest, PdfHiddenTextIsOnUnlessTurnedOff) {
  absl::StatusOr<ServerConfig> c = Parse({});
  ASSERT_OK(c);
  EXPECT_TRUE(c->pdf_hidden_text);
  c = Parse({"--pdf-hidden-text=false"});
  ASSERT_OK(c);
  EXPECT_FALSE(c->pdf_hidden_text);
}

// Heavy revisions are looked for unless the operator turns them off (a registry of texts made
// from one template, which they may flag as each other's).
TEST_F(ServerConfigTest, HeavyRevisionsAreOnUnlessTheOperatorTurnsThemOff) {
  absl::StatusOr<ServerConfig> c = Parse({});
  ASSERT_OK(c);
  EXPECT_TRUE(c->heavy_revisions);
  c = Parse({"--heavy-revisions=false"});
  ASSERT_OK(c);
  EXPECT_FALSE(c->heavy_revisions);
  c = Parse({"--heavy-revisions"});
  ASSERT_OK(c);
  EXPECT_TRUE(c->heavy_revisions);
}

TEST_F(ServerConfigTest, OverloadLimitsHaveExplicitDefaults) {
  absl::StatusOr<ServerConfig> c = Parse({});
  ASSERT_OK(c);
  EXPECT_EQ(c->max_inflight_bytes, 64u << 20);
  EXPECT_EQ(c->admission_wait_ms, 1000u);
  EXPECT_EQ(c->max_streams_per_connection, 16u);
  EXPECT_EQ(c->transport_memory_bytes, 1u << 30);
  EXPECT_EQ(c->keepalive_seconds, 60u);
  EXPECT_EQ(c->keepalive_timeout_seconds, 20u);
  EXPECT_EQ(c->handshake_timeout_seconds, 10u);

  c = Parse({"--max-concurrent-calls", "3", "--max-inflight-bytes", "1000", "--admission-wait-ms",
             "5", "--max-streams-per-connection", "4", "--transport-memory-mb", "32",
             "--keepalive-seconds", "7", "--keepalive-timeout-seconds", "3",
             "--handshake-timeout-seconds", "2"});
  ASSERT_OK(c);
  EXPECT_EQ(c->max_concurrent_calls, 3u);
  EXPECT_EQ(c->max_inflight_bytes, 1000u);
  EXPECT_EQ(c->max_streams_per_connection, 4u);
  EXPECT_EQ(c->transport_memory_bytes, 32u << 20);
  EXPECT_EQ(c->keepalive_seconds, 7u);
  EXPECT_EQ(c->handshake_timeout_seconds, 2u);
  for (const char* flag : {"--max-inflight-bytes", "--max-streams-per-connection",
                           "--keepalive-seconds", "--handshake-timeout-seconds"}) {
    EXPECT_EQ(Parse({flag, "0"}).status().code(), absl::StatusCode::kInvalidArgument) << flag;
  }
}

TEST_F(ServerConfigTest, AdmissionLimitsFollowTheCoresAndLeaveThreadsForCheapCalls) {
  ASSERT_OK_AND_ASSIGN(ServerConfig c, Parse({}));
  // The default 64 threads: 62 for checks and registrations, 8 at work and 54 waiting.
  EXPECT_EQ(ResolveAdmissionLimits(c, /*cores=*/2).max_waiting, 54u);
  ASSERT_OK_AND_ASSIGN(c, Parse({"--admission-wait-ms", "250", "--threads", "16"}));
  // 16 threads: 14 for checks and registrations, four a core at work, the rest waiting.
  AdmissionLimits limits = ResolveAdmissionLimits(c, /*cores=*/2);
  EXPECT_EQ(limits.max_calls, 8u);
  EXPECT_EQ(limits.max_waiting, 6u);
  EXPECT_EQ(limits.max_bytes, 64u << 20);
  EXPECT_EQ(limits.max_wait, absl::Milliseconds(250));
  EXPECT_EQ(ResolveAdmissionLimits(c, /*cores=*/1).max_calls, 4u);
  limits = ResolveAdmissionLimits(c, /*cores=*/3);
  EXPECT_EQ(limits.max_calls, 12u);
  EXPECT_EQ(limits.max_waiting, 2u);
  limits = ResolveAdmissionLimits(c, /*cores=*/10);  // at most the 14
  EXPECT_EQ(limits.max_calls, 14u);
  EXPECT_EQ(limits.max_waiting, 0u);
  limits = ResolveAdmissionLimits(c, /*cores=*/64);
  EXPECT_EQ(limits.max_calls, 14u);
  EXPECT_EQ(limits.max_waiting, 0u);

  ASSERT_OK_AND_ASSIGN(c, Parse({"--max-concurrent-calls", "5", "--threads", "8"}));
  limits = ResolveAdmissionLimits(c, /*cores=*/64);
  EXPECT_EQ(limits.max_calls, 5u);
  EXPECT_EQ(limits.max_waiting, 1u);
}

TEST_F(ServerConfigTest, RecordedParamsWinAndConflictingFlagsAreRefused) {
  ServerConfig config;
  config.data_dir = dir_.string();
  absl::StatusOr<HashKey> key = HashKey::FromHex("00112233445566778899aabbccddeeff");
  ASSERT_OK(key);
  config.k = 6;
  absl::StatusOr<ChunkingParams> p = ResolveChunkingParams(config, std::nullopt, *key);
  ASSERT_OK(p);
  EXPECT_EQ(p->k, 6u);
  EXPECT_EQ(p->key_id, key->Id());
  const ChunkingParams recorded = *p;

  ServerConfig later;  // defaults (k = 5) that were not given explicitly: the record wins
  later.data_dir = dir_.string();
  p = ResolveChunkingParams(later, recorded, *key);
  ASSERT_OK(p);
  EXPECT_EQ(p->k, 6u);

  later.k = 3;
  later.explicit_chunking.insert("k");
  EXPECT_EQ(ResolveChunkingParams(later, recorded, *key).status().code(),
            absl::StatusCode::kFailedPrecondition);

  absl::StatusOr<HashKey> other = HashKey::FromHex("ffeeddccbbaa99887766554433221100");
  ServerConfig plain;
  plain.data_dir = dir_.string();
  EXPECT_EQ(ResolveChunkingParams(plain, recorded, *other).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ServerConfigTest, StemPairsAreForNewIndexesAndRecordedWithTheirVersion) {
  absl::StatusOr<HashKey> key = HashKey::FromHex("00112233445566778899aabbccddeeff");
  ASSERT_OK(key);
  ASSERT_OK_AND_ASSIGN(ServerConfig plain, Parse({}));
  ASSERT_OK_AND_ASSIGN(ChunkingParams off, ResolveChunkingParams(plain, std::nullopt, *key));
  EXPECT_EQ(off.stem_pairs, 0u);
  ASSERT_OK_AND_ASSIGN(ServerConfig asked, Parse({"--stem-pairs", "1"}));
  ASSERT_OK_AND_ASSIGN(ChunkingParams on, ResolveChunkingParams(asked, std::nullopt, *key));
  EXPECT_EQ(on.stem_pairs, 1u);
  EXPECT_EQ(on.stem_version, kStemPairsVersion);
  // An existing index keeps what it was created with; asking it for pairs it lacks is refused.
  ASSERT_OK_AND_ASSIGN(ChunkingParams kept, ResolveChunkingParams(plain, on, *key));
  EXPECT_EQ(kept, on);
  absl::Status refused = ResolveChunkingParams(asked, off, *key).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("stem_pairs"), std::string::npos) << refused;
  EXPECT_FALSE(Parse({"--stem-pairs", "65"}).ok());
}

TEST_F(ServerConfigTest, LifetimeFlagsTakeDurations) {
  absl::StatusOr<ServerConfig> c = Parse({});
  ASSERT_OK(c);
  EXPECT_EQ(c->audit_retention_seconds, 90 * 86400);
  EXPECT_EQ(c->sweep_interval_seconds, 60);
  c = Parse({"--audit-retention", "30d", "--sweep-interval", "10s"});
  ASSERT_OK(c);
  EXPECT_EQ(c->audit_retention_seconds, 30 * 86400);
  EXPECT_EQ(c->sweep_interval_seconds, 10);
  const std::string file = (dir_ / "copsd.conf").string();
  std::ofstream(file) << "audit_retention = 0s\n";
  c = Parse({"--config", file});
  ASSERT_OK(c);
  EXPECT_EQ(c->audit_retention_seconds, 0);  // kept forever
  c = Parse({"--audit-retention", "30"});
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_NE(c.status().message().find("\"30\" is not a duration"), std::string::npos)
      << c.status();
}

TEST_F(ServerConfigTest, AClusterNodeIdNeedsTheLogAndAValidName) {
  const char* alone[] = {"copsd", "--cluster-node-id", "n1"};
  bool help = false;
  std::string text;
  EXPECT_FALSE(ParseServerConfig(3, alone, &help, &text).ok());
  const char* dotted[] = {"copsd", "--follow", "nats://127.0.0.1:1", "--cluster-node-id", "a.b"};
  EXPECT_FALSE(ParseServerConfig(5, dotted, &help, &text).ok());
  const char* good[] = {"copsd", "--follow", "nats://127.0.0.1:1", "--cluster-node-id", "gw-1"};
  ASSERT_OK_AND_ASSIGN(ServerConfig config, ParseServerConfig(5, good, &help, &text));
  EXPECT_EQ(config.cluster_node_id, "gw-1");
  EXPECT_EQ(config.heartbeat_ms, 1000u);
}

}  // namespace
}  // namespace cops
