#include "storage/postings_store.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/index_db.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace codec = storage_codec;
using testing::TempDir;

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The merge operands a batch holds, per column family, as (hash, document) in batch order.
class Operands : public rocksdb::WriteBatch::Handler {
 public:
  rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& key,
                          const rocksdb::Slice& value) override {
    std::string_view op = value.ToStringView();
    uint64_t doc = 0;
    EXPECT_EQ(key.size(), 8u);
    EXPECT_EQ(static_cast<uint8_t>(op.at(0)), static_cast<uint8_t>(codec::PostingOp::kAdd));
    op.remove_prefix(1);
    EXPECT_TRUE(codec::GetVarint64(&op, &doc));
    by_cf[cf].emplace_back(codec::DecodeFixed64BE(key.data()), doc);
    return rocksdb::Status::OK();
  }
  std::map<uint32_t, std::vector<std::pair<ChunkHash, DocId>>> by_cf;
};

// A window's operands reach the batch in (hash, document) order within each shard, so that
// each memtable insert resumes where the previous one ended; past 4,096 operands the order
// comes from a radix pass on the hashes' top bits and a sort per bucket. Documents whose
// hashes crowd into one bucket, a hash all share and a hash repeated within a document are
// each one operand per (hash, document), in order.
TEST(PostingsStoreTest, AWindowsOperandsAreInHashThenDocumentOrderPerShard) {
  TempDir dir;
  IndexOptions o;
  o.path = dir.Join("db");
  o.params.key_id = "0123456789abcdef";
  o.block_cache_bytes = 8 << 20;
  o.write_buffer_bytes = 4 << 20;
  o.bucketed_postings = false;
  o.postings_shards = 2;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<IndexDb> db, IndexDb::Open(o));
  PostingsStore store(*db, /*lookup_threads=*/1);

  constexpr ChunkHash kShared = 0x5eed5eed5eed5eedull;
  std::vector<std::vector<ChunkHash>> hashes(48);
  for (size_t d = 0; d < hashes.size(); ++d) {
    for (uint32_t j = 0; j < 150; ++j) {
      hashes[d].push_back(d < 40 ? Mix(d * 1000003 + j)
                                 // one radix bucket for the last eight documents
                                 : 0x123456789a000000ull + (j * 7919 + d * 13) % 4096);
    }
    hashes[d].push_back(kShared);
    hashes[d].push_back(hashes[d][7]);  // twice in this document
    std::sort(hashes[d].begin(), hashes[d].end());
  }
  std::vector<std::vector<Posting>> postings(hashes.size());
  std::vector<PostingsStore::DocumentPostings> documents;
  size_t expected = 0;
  // Documents in descending id order: the batch order must not follow the input's.
  for (size_t d = 0; d < hashes.size(); ++d) {
    const DocId doc = 1000 - d;
    for (uint32_t j = 0; j < hashes[d].size(); ++j) postings[d].push_back(Posting{doc, j, j, j + 1});
    documents.push_back({doc, hashes[d], postings[d]});
    std::vector<ChunkHash> distinct = hashes[d];
    expected += static_cast<size_t>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
  }

  rocksdb::WriteBatch batch;
  store.Add(&batch, documents);
  Operands ops;
  ASSERT_TRUE(batch.Iterate(&ops).ok());
  EXPECT_EQ(ops.by_cf.size(), 2u);
  size_t written = 0;
  for (const auto& [cf, list] : ops.by_cf) {
    written += list.size();
    for (size_t i = 1; i < list.size(); ++i) {
      ASSERT_LT(list[i - 1], list[i]) << "column family " << cf << ", operand " << i;
    }
  }
  EXPECT_EQ(written, expected);
}

}  // namespace
}  // namespace cops
