// Index::UpgradePostings: rewrites an index's per-hash postings (schema 2-3) into the
// bucketed layout of schema 4 in place (docs/storage-format.md, "Compatibility rules").

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "core/status_macros.h"
#include "rocksdb/write_batch.h"
#include "storage/bucket_codec.h"
#include "storage/codec.h"
#include "storage/index.h"
#include "storage/index_db.h"
#include "storage/index_meta.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

namespace codec = storage_codec;
namespace bc = bucket_codec;

// Buckets written per write batch, by bytes (the batch is held in memory).
constexpr size_t kBatchBytes = 8u << 20;

// Copies one per-hash shard into the bucket family of the same hash range; returns the
// number of hashes copied.
absl::StatusOr<uint64_t> CopyShard(const IndexDb& db, rocksdb::ColumnFamilyHandle* from,
                                   rocksdb::ColumnFamilyHandle* to, const bc::BucketLayout& layout) {
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  read.readahead_size = 2u << 20;
  std::unique_ptr<rocksdb::Iterator> it(db.db().NewIterator(read, from));
  rocksdb::WriteBatch batch;
  std::vector<bc::BucketGroup> groups;
  uint32_t bucket = 0;
  uint64_t hashes = 0;
  PostingList list;
  auto put_bucket = [&]() -> absl::Status {
    if (groups.empty()) return absl::OkStatus();
    char key[4];
    bc::EncodeBucketKey(key, bucket);
    batch.Put(to, rocksdb::Slice(key, 4), bc::EncodeBucket(groups));
    groups.clear();
    if (batch.GetDataSize() < kBatchBytes) return absl::OkStatus();
    rocksdb::Status s = db.Write(&batch, /*sync=*/false);
    batch.Clear();
    return FromRocks(s, "writing postings buckets");
  };
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    if (k.size() != 8) {
      return absl::DataLossError("index " + db.options().path + ": postings key " +
                                 absl::BytesToHexString(absl::string_view(k.data(), k.size())) +
                                 " is not a chunk hash");
    }
    const ChunkHash h = codec::DecodeFixed64BE(k.data());
    absl::Status decoded = codec::DecodePostingList(it->value().ToStringView(), &list);
    if (!decoded.ok()) {
      return absl::DataLossError("index " + db.options().path + ": postings of chunk " +
                                 absl::BytesToHexString(absl::string_view(k.data(), k.size())) +
                                 ": " + std::string(decoded.message()));
    }
    ++hashes;
    if (list.doc_frequency == 0 && list.postings.empty()) continue;  // all removed
    if (layout.Bucket(h) != bucket) COPS_RETURN_IF_ERROR(put_bucket());
    bucket = layout.Bucket(h);
    uint32_t listed = 0;
    for (size_t i = 0; i < list.postings.size(); ++i) {
      listed += i == 0 || list.postings[i].doc_id != list.postings[i - 1].doc_id;
    }
    const uint32_t beyond = list.doc_frequency > listed ? list.doc_frequency - listed : 0;
    const uint64_t rest = layout.Rest(h);
    if (!groups.empty() && groups.back().rest == rest) {
      // Hashes that agree in their stored bits (hash_bits < 64) share one group.
      bc::BucketGroup& g = groups.back();
      g.beyond_cap += beyond;
      g.postings.insert(g.postings.end(), list.postings.begin(), list.postings.end());
      std::sort(g.postings.begin(), g.postings.end(), [](const Posting& a, const Posting& b) {
        return a.doc_id != b.doc_id ? a.doc_id < b.doc_id : a.ordinal < b.ordinal;
      });
    } else {
      groups.push_back(bc::BucketGroup{rest, beyond, std::move(list.postings)});
      list.postings = {};
    }
  }
  COPS_RETURN_IF_ERROR(FromRocks(it->status(), "reading the per-hash postings"));
  COPS_RETURN_IF_ERROR(put_bucket());
  COPS_RETURN_IF_ERROR(FromRocks(db.Write(&batch, /*sync=*/false), "writing postings buckets"));
  return hashes;
}

}  // namespace

absl::StatusOr<uint64_t> Index::UpgradePostings(const IndexOptions& options) {
  if (options.read_only) {
    return absl::FailedPreconditionError("upgrading index " + options.path +
                                         " needs it writable");
  }
  IndexOptions o = options;
  o.create_if_missing = false;
  // The layout asked for is applied below; the open must not compare it with none recorded.
  o.postings_bucket_bits = 0;
  o.postings_hash_bits = 0;
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<IndexDb> db, IndexDb::Open(o));
  COPS_ASSIGN_OR_RETURN(auto version, db->Get(index_layout::kMeta, index_layout::kSchemaVersionKey,
                                              "reading schema version"));
  uint64_t schema = 0;
  const std::string recorded = version.value_or("");
  std::string_view v = recorded;
  if (!version.has_value() || !codec::GetVarint64(&v, &schema)) {
    return absl::FailedPreconditionError("index " + o.path + " has no COPS meta data");
  }
  if (db->bucket_layout().has_value()) {
    // Already bucketed: finish a run that stopped after its switch.
    COPS_RETURN_IF_ERROR(db->DropHashPostings());
    return uint64_t{0};
  }
  // Schema 5 (documents without chunk lists) may sit on per-hash postings; 4 may not.
  if (schema < codec::kSchemaVersionBase || schema == codec::kSchemaVersionBuckets ||
      schema > codec::kSchemaVersion) {
    return absl::FailedPreconditionError(
        "index " + o.path + " has schema version " + std::to_string(schema) +
        (schema < codec::kSchemaVersionBase ? "; open it writable once to upgrade it to 2 first"
                                            : " without a bucket layout"));
  }
  const bc::BucketLayout layout{
      options.postings_bucket_bits != 0 ? options.postings_bucket_bits
                                        : bc::BucketBitsFor(options.expected_documents),
      options.postings_hash_bits != 0 ? options.postings_hash_bits : 64};
  COPS_RETURN_IF_ERROR(layout.Validate());
  // Any buckets left by an earlier run that stopped before its switch are dropped.
  const auto shards = static_cast<uint32_t>(db->hash_shards().size());
  COPS_RETURN_IF_ERROR(db->RecreateBucketShards(shards));
  uint64_t hashes = 0;
  for (uint32_t i = 0; i < shards; ++i) {
    COPS_ASSIGN_OR_RETURN(uint64_t copied, CopyShard(*db, db->hash_shards()[i],
                                                     db->bucket_shards()[i], layout));
    hashes += copied;
  }
  // The switch: one synced write (it makes the unsynced bucket writes before it durable too).
  IndexMeta meta(*db);
  rocksdb::WriteBatch b;
  meta.PutSchemaVersion(&b, std::max<uint64_t>(schema, codec::kSchemaVersionBuckets));
  meta.PutBucketLayout(&b, layout);
  COPS_RETURN_IF_ERROR(FromRocks(db->Write(&b, /*sync=*/true), "switching to postings buckets"));
  db->UseBuckets(layout);
  COPS_RETURN_IF_ERROR(db->DropHashPostings());
  return hashes;
}

}  // namespace cops
