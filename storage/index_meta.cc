#include "storage/index_meta.h"

#include <string>
#include <string_view>

#include "core/params.h"
#include "core/status_macros.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/rocks_status.h"
#include "storage/stem_pair_store.h"

namespace cops {
namespace {

namespace codec = storage_codec;
using namespace index_layout;  // the column families and keys this file names

std::string VarintValue(uint64_t v) {
  std::string s;
  codec::PutVarint64(&s, v);
  return s;
}

std::string EncodeCounters(const IndexCounters& c) {
  std::string s;
  codec::PutVarint64(&s, c.documents);
  codec::PutVarint64(&s, c.postings);
  codec::PutVarint64(&s, c.text_bytes);
  return s;
}

}  // namespace

absl::StatusOr<IndexMetaState> IndexMeta::LoadOrInit() const {
  const IndexOptions& options = db_.options();
  const std::string& path = options.path;
  IndexMetaState state;
  COPS_ASSIGN_OR_RETURN(auto version, db_.Get(kMeta, kSchemaVersionKey, "reading schema version"));
  if (!version.has_value()) {
    if (options.read_only) {
      return absl::FailedPreconditionError("index " + path + " has no COPS meta data");
    }
    COPS_RETURN_IF_ERROR(options.params.Validate());
    rocksdb::WriteBatch b;
    // A new index with bucketed postings is of schema 4 from the start: builds before it
    // would misread its postings.
    const auto& layout = db_.bucket_layout();
    const uint64_t schema = layout.has_value() ? codec::kSchemaVersionBuckets
                                               : codec::kSchemaVersionBase;
    PutSchemaVersion(&b, schema);
    if (layout.has_value()) PutBucketLayout(&b, *layout);
    if (db_.stem_pairs() != nullptr) {
      b.Put(db_.cf(kMeta), kStemPairsLayoutKey, VarintValue(db_.stem_pairs_layout()));
    }
    b.Put(db_.cf(kMeta), kParamsKey, options.params.Encode());
    b.Put(db_.cf(kMeta), kKeyIdKey, options.params.key_id);
    PutNextDocId(&b, 1);
    PutCounters(&b, IndexCounters{});
    rocksdb::WriteOptions w;
    w.sync = true;
    COPS_RETURN_IF_ERROR(FromRocks(db_.db().Write(w, &b), "initializing index " + path));
    state.schema = schema;
    return state;
  }
  std::string_view v = *version;
  if (!codec::GetVarint64(&v, &state.schema)) {
    return absl::DataLossError("index " + path + ": malformed schema version");
  }
  if (state.schema > codec::kSchemaVersion) {
    return absl::FailedPreconditionError(
        "index " + path + " has schema version " + std::to_string(state.schema) +
        ", newer than this build's " + std::to_string(codec::kSchemaVersion));
  }
  COPS_ASSIGN_OR_RETURN(auto params, db_.Get(kMeta, kParamsKey, "reading chunking parameters"));
  if (!params.has_value()) {
    return absl::DataLossError("index " + path + ": chunking parameters missing");
  }
  COPS_ASSIGN_OR_RETURN(ChunkingParams stored, ChunkingParams::Decode(*params));
  if (!(stored == options.params)) {
    return absl::FailedPreconditionError("index " + path +
                                         " was built with other chunking parameters (index vs "
                                         "requested): " +
                                         stored.DiffWith(options.params));
  }
  COPS_ASSIGN_OR_RETURN(auto next, db_.Get(kMeta, kNextDocIdKey, "reading next document id"));
  COPS_ASSIGN_OR_RETURN(auto counters_value, db_.Get(kMeta, kCountersKey, "reading counters"));
  if (!next.has_value() || !counters_value.has_value()) {
    return absl::DataLossError("index " + path + ": meta data incomplete");
  }
  std::string_view n = *next, c = *counters_value;
  if (!codec::GetVarint64(&n, &state.next_doc_id) ||
      !codec::GetVarint64(&c, &state.counters.documents) ||
      !codec::GetVarint64(&c, &state.counters.postings) ||
      !codec::GetVarint64(&c, &state.counters.text_bytes)) {
    return absl::DataLossError("index " + path + ": malformed meta data");
  }
  COPS_ASSIGN_OR_RETURN(auto applied,
                        db_.Get(kMeta, kAppliedLogSequenceKey, "reading log sequence"));
  if (applied.has_value()) {
    std::string_view a = *applied;
    if (!codec::GetVarint64(&a, &state.applied_log_sequence)) {
      return absl::DataLossError("index " + path + ": malformed applied log sequence");
    }
  }
  return state;
}

void IndexMeta::PutSchemaVersion(rocksdb::WriteBatch* b, uint64_t schema) const {
  b->Put(db_.cf(kMeta), kSchemaVersionKey, VarintValue(schema));
}

void IndexMeta::PutBucketLayout(rocksdb::WriteBatch* b,
                                const bucket_codec::BucketLayout& layout) const {
  std::string v;
  codec::PutVarint64(&v, layout.bucket_bits);
  codec::PutVarint64(&v, layout.hash_bits);
  b->Put(db_.cf(kMeta), kBucketLayoutKey, v);
}

void IndexMeta::PutNextDocId(rocksdb::WriteBatch* b, DocId next) const {
  b->Put(db_.cf(kMeta), kNextDocIdKey, VarintValue(next));
}

void IndexMeta::PutCounters(rocksdb::WriteBatch* b, const IndexCounters& c) const {
  b->Put(db_.cf(kMeta), kCountersKey, EncodeCounters(c));
}

void IndexMeta::PutAppliedLogSequence(rocksdb::WriteBatch* b, uint64_t sequence) const {
  b->Put(db_.cf(kMeta), kAppliedLogSequenceKey, VarintValue(sequence));
}

}  // namespace cops
