#include "storage/stem_pair_store.h"

#include <memory>
#include <string>

#include "core/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "storage/index_db.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

constexpr char kPairTag = 'p';
constexpr char kDocTag = 'd';
constexpr size_t kPrefixBytes = 5;  // tag + BE32 pair

void PutBE32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutBE64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetBE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string PairPrefix(uint32_t pair) {
  std::string k(1, kPairTag);
  PutBE32(&k, pair);
  return k;
}
std::string PairKey(uint32_t pair, DocId id) {
  std::string k = PairPrefix(pair);
  PutBE64(&k, id);
  return k;
}
std::string DocListKey(DocId id) {
  std::string k(1, kDocTag);
  PutBE64(&k, id);
  return k;
}

}  // namespace

rocksdb::ColumnFamilyOptions StemPairsCfOptions(size_t write_buffer_bytes,
                                                const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = std::min<size_t>(write_buffer_bytes, 32u << 20);
  cf.level_compaction_dynamic_level_bytes = true;
  cf.compression = rocksdb::kNoCompression;  // keyed hashes and ids: nothing to shrink
  cf.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(kPrefixBytes));
  cf.memtable_prefix_bloom_size_ratio = 0.02;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  t.format_version = 5;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.whole_key_filtering = false;  // ranges by pair: the prefix is what a lookup knows
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return cf;
}

bool StemPairStore::available() const { return db_.stem_pairs() != nullptr; }

absl::Status StemPairStore::Lookup(std::span<const uint32_t> pairs, uint32_t max_documents,
                                   std::vector<std::vector<DocId>>* out) const {
  out->resize(pairs.size());
  for (std::vector<DocId>& holders : *out) holders.clear();
  if (pairs.empty()) return absl::OkStatus();
  rocksdb::ReadOptions r;
  r.prefix_same_as_start = true;  // each Seek stays in its pair's range (prefix bloom)
  std::unique_ptr<rocksdb::Iterator> it(db_.db().NewIterator(r, db_.stem_pairs()));
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::vector<DocId>& holders = (*out)[i];
    const std::string prefix = PairPrefix(pairs[i]);
    for (it->Seek(AsSlice(prefix)); it->Valid() && it->key().starts_with(AsSlice(prefix));
         it->Next()) {
      const rocksdb::Slice key = it->key();
      if (key.size() != kPrefixBytes + 8) {
        return absl::DataLossError("stem pairs: malformed key of " + std::to_string(key.size()) +
                                   " bytes");
      }
      if (holders.size() + 1 >= max_documents) {  // this one makes max_documents: common
        holders.clear();
        break;
      }
      holders.push_back(GetBE(key.data() + kPrefixBytes, 8));
    }
  }
  return FromRocks(it->status(), "reading stem pairs");
}

void StemPairStore::Add(rocksdb::WriteBatch* b, DocId id, std::span<const uint32_t> pairs) const {
  if (pairs.empty() || !available()) return;
  std::string list;
  list.reserve(4 * pairs.size());
  for (uint32_t pair : pairs) {
    b->Put(db_.stem_pairs(), PairKey(pair, id), rocksdb::Slice());
    PutBE32(&list, pair);
  }
  b->Put(db_.stem_pairs(), DocListKey(id), list);
}

absl::Status StemPairStore::AddRemoval(rocksdb::WriteBatch* b, DocId id) const {
  if (!available()) return absl::OkStatus();
  const std::string key = DocListKey(id);
  COPS_ASSIGN_OR_RETURN(auto list, db_.Get(db_.stem_pairs(), key, "reading a document's stem pairs"));
  if (!list.has_value()) return absl::OkStatus();
  if (list->size() % 4 != 0) {
    return absl::DataLossError("stem pairs of document " + std::to_string(id) + ": " +
                               std::to_string(list->size()) + " bytes, not whole pairs");
  }
  for (size_t i = 0; i < list->size(); i += 4) {
    b->Delete(db_.stem_pairs(),
              PairKey(static_cast<uint32_t>(GetBE(list->data() + i, 4)), id));
  }
  b->Delete(db_.stem_pairs(), key);
  return absl::OkStatus();
}

}  // namespace cops
