#ifndef COPS_STORAGE_INDEX_LAYOUT_H_
#define COPS_STORAGE_INDEX_LAYOUT_H_

// The names of an index's column families and meta keys, in one place for the parts of the
// Index that own them (storage/index_*.h, postings_store.h, document_store.h,
// duplicate_maps.h, expiry_queue.h). Internal to storage/; the layout is described as prose
// in docs/storage-format.md. Every name here reaches disk: on-disk: do not change.
//
// Thread-safety: constants and pure functions.

#include <cstdint>
#include <string>

namespace cops::index_layout {

// Column family names. on-disk: do not change.
inline constexpr char kMetaCf[] = "default";
inline constexpr char kPostingsCf[] = "postings";
inline constexpr char kDocumentsCf[] = "documents";
inline constexpr char kDocChunksCf[] = "doc_chunks";
inline constexpr char kExternalIdsCf[] = "external_ids";
inline constexpr char kSha256Cf[] = "sha256";
inline constexpr char kTextsCf[] = "texts";
// Verification grams (created with every index since verify_k; an older index opened
// read-only may lack it). Kept outside CfIndex: its handle is IndexDb::verify.
inline constexpr char kVerifyCf[] = "verify";

// Positions in IndexDb::cfs; the order of kCfNames.
enum CfIndex {
  kMeta = 0,
  kPostings,
  kDocuments,
  kDocChunks,
  kExternalIds,
  kSha256,
  kTexts,
  kNumCfs
};
inline constexpr const char* kCfNames[kNumCfs] = {
    kMetaCf, kPostingsCf, kDocumentsCf, kDocChunksCf, kExternalIdsCf, kSha256Cf, kTextsCf};

// The postings may be split by the top bits of the chunk hash over 1, 2 or 4 column
// families ("shards"): shard 0 is kPostingsCf, shard i > 0 is kPostingsCf + "." + i. Each
// shard is its own LSM tree, so their flushes and compactions run in parallel (RocksDB
// splits one level-0 compaction into parallel parts poorly when every file spans the whole
// hash space). The shard count is fixed when the index is created and read back from the
// column families present. on-disk: do not change the naming.
inline constexpr uint32_t kMaxPostingsShards = 4;
inline bool ValidShardCount(uint32_t n) { return n == 1 || n == 2 || n == 4; }
inline std::string PostingsShardName(uint32_t shard) {
  return shard == 0 ? std::string(kPostingsCf)
                    : std::string(kPostingsCf) + "." + std::to_string(shard);
}

// The bucketed postings (schema 4, storage/bucket_codec.h) live in families of their own,
// split into shards as the per-hash postings are: shard 0 is kBucketsCf, shard i > 0 is
// kBucketsCf + "." + i. An index of schema 4 keeps an empty kPostingsCf (it is one of the
// fixed families). on-disk: do not change the naming.
inline constexpr char kBucketsCf[] = "buckets";
inline std::string BucketShardName(uint32_t shard) {
  return shard == 0 ? std::string(kBucketsCf) : std::string(kBucketsCf) + "." + std::to_string(shard);
}

// Meta keys (column family kMetaCf). on-disk: do not change.
inline constexpr char kSchemaVersionKey[] = "schema_version";  // varint
inline constexpr char kParamsKey[] = "chunking_params";        // ChunkingParams::Encode()
inline constexpr char kKeyIdKey[] = "key_id";           // params.key_id, for people and tools
inline constexpr char kNextDocIdKey[] = "next_doc_id";  // varint
inline constexpr char kCountersKey[] = "counters";      // varint documents, postings, text_bytes
// The bucketed postings' layout: varint bucket_bits, varint hash_bits. Present exactly when the
// postings are bucketed (schema 4); written with the schema when the index is created or when
// storage/index_upgrade.cc switches it over.
inline constexpr char kBucketLayoutKey[] = "postings_buckets";
// Registration-log sequence of the last applied event (replication/); absent = 0.
inline constexpr char kAppliedLogSequenceKey[] = "applied_log_sequence";  // varint
// The identity of the log stream those events came from (replication/); absent = none yet.
inline constexpr char kLogStreamKey[] = "log_stream";  // text, e.g. "COPS_REGISTRATIONS@<ns>"
// Expiry order: kExpiryPrefix + BE64 expiry (micros) + BE64 document id -> empty, one per
// document with an expiry, written and deleted in the batches that write and delete it
// (storage/expiry_queue.h).
inline constexpr char kExpiryPrefix[] = "expiry/";

// Name of the postings' merge operator, recorded in the OPTIONS file: a reopen must use the
// same operator. on-disk: do not change.
inline constexpr char kMergeOperatorName[] = "cops.PostingListMerge";
inline constexpr char kBucketMergeOperatorName[] = "cops.PostingBucketMerge";

}  // namespace cops::index_layout

#endif  // COPS_STORAGE_INDEX_LAYOUT_H_
