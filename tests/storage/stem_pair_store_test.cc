#include "storage/stem_pair_store.h"
#include "tests/storage/raw_stem_pairs.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/clock.h"
#include "rocksdb/db.h"

#include "core/stem_pairs.h"
#include "gtest/gtest.h"
#include "storage/index.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

using testing::TempDir;

ChunkingParams Params(uint32_t stem_pairs) {
  ChunkingParams p;
  p.key_id = "0123456789abcdef";
  p.stem_pairs = stem_pairs;
  p.stem_version = stem_pairs != 0 ? kStemPairsVersion : 0;
  return p;
}

IndexOptions Options(const std::string& path, uint32_t stem_pairs) {
  IndexOptions o;
  o.path = path;
  o.params = Params(stem_pairs);
  o.block_cache_bytes = 8 << 20;
  o.write_buffer_bytes = 4 << 20;
  return o;
}

// A fingerprint of `seed`'s chunks (distinct seeds share none: no exact duplicates) and the
// given stem pairs, distinct, in its text's order.
DocumentFingerprint Fingerprint(uint64_t seed, std::vector<uint32_t> pairs) {
  DocumentFingerprint fp;
  for (uint32_t j = 0; j < 4; ++j) {
    fp.chunks.push_back(Chunk{seed * 1000 + j, j, 10 * j, 10 * j + 7, j, j + 5});
  }
  fp.total_chunks = 4;
  fp.sha256[0] = static_cast<uint8_t>(seed);
  fp.input_bytes = 50;
  fp.stem_pair_order = pairs;
  std::sort(pairs.begin(), pairs.end());
  fp.stem_pairs = std::move(pairs);
  return fp;
}

DocumentRecord Record(const std::string& external_id) {
  DocumentRecord r;
  r.owner = "alice";
  r.collection = "c";
  r.external_id = external_id;
  return r;
}

std::vector<std::vector<DocId>> Holders(const Index& index, std::vector<uint32_t> pairs,
                                        uint32_t max_documents) {
  std::vector<std::vector<DocId>> out;
  absl::StatusOr<bool> kept = index.LookupStemPairs(pairs, max_documents, &out);
  EXPECT_OK(kept);
  EXPECT_TRUE(kept.ok() && *kept);
  return out;
}

using Docs = std::vector<std::vector<DocId>>;

TEST(StemPairStoreTest, HoldersAreCountedUnderRegisterAndUnregister) {
  TempDir dir;
  auto index = Index::Open(Options(dir.Join("db"), 1));
  ASSERT_OK(index);
  Index& ix = **index;
  const DocId a = ix.Register(Record("a"), Fingerprint(1, {1, 2, 3}), "a")->id;
  const DocId b = ix.Register(Record("b"), Fingerprint(2, {2, 3, 4}), "b")->id;
  const DocId c = ix.Register(Record("c"), Fingerprint(3, {3, 0xFFFFFFFF}), "c")->id;
  const DocId d = ix.Register(Record("d"), Fingerprint(4, {}), "d")->id;  // holds none
  const std::vector<uint32_t> pairs = {1, 2, 3, 4, 5, 0xFFFFFFFF};
  // Fewer than 3 holders: listed; pair 3 has 3, it is common.
  EXPECT_EQ(Holders(ix, pairs, 3), (Docs{{a}, {a, b}, {}, {b}, {}, {c}}));
  EXPECT_EQ(Holders(ix, pairs, 4), (Docs{{a}, {a, b}, {a, b, c}, {b}, {}, {c}}));
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{a}, {}, {}, {b}, {}, {c}}));
  // Pairs in any order (a check's come ascending, and MultiGet is then spared its sort).
  EXPECT_EQ(Holders(ix, {0xFFFFFFFF, 5, 1, 4, 2}, 3), (Docs{{c}, {}, {a}, {b}, {a, b}}));

  ASSERT_OK(ix.Unregister(b));
  ASSERT_OK(ix.Unregister(d));
  EXPECT_EQ(Holders(ix, pairs, 3), (Docs{{a}, {a}, {a, c}, {}, {}, {c}}));

  // Kept across a reopen, as every acknowledged write.
  index->reset();
  index = Index::Open(Options(dir.Join("db"), 1));
  ASSERT_OK(index);
  EXPECT_EQ(Holders(**index, pairs, 3), (Docs{{a}, {a}, {a, c}, {}, {}, {c}}));
  ASSERT_OK((*index)->Flush());
  EXPECT_GT((*index)->Stats().stem_pairs_disk_bytes, 0u);
  ASSERT_OK((*index)->Unregister(a));
  ASSERT_OK((*index)->Unregister(c));
  EXPECT_EQ(Holders(**index, pairs, 3), (Docs{{}, {}, {}, {}, {}, {}}));
}

TEST(StemPairStoreTest, ACommonPairIsNotReadAgainUntilADocumentIsRemoved) {
  TempDir dir;
  auto index = Index::Open(Options(dir.Join("db"), 1));
  ASSERT_OK(index);
  Index& ix = **index;
  const DocId a = ix.Register(Record("a"), Fingerprint(1, {7, 8}), "a")->id;
  const DocId b = ix.Register(Record("b"), Fingerprint(2, {7, 9}), "b")->id;
  const std::vector<uint32_t> pairs = {7, 8, 9};
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{}, {a}, {b}}));
  EXPECT_EQ(ix.Stats().stem_pairs_from_cache, 0u);
  // Pair 7 was read held by two: the next lookups answer it from the cache, alike.
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{}, {a}, {b}}));
  EXPECT_EQ(ix.Stats().stem_pairs_from_cache, 1u);
  // A registration only adds holders: it stays common, and still answered so.
  const DocId c = ix.Register(Record("c"), Fingerprint(3, {7, 8}), "c")->id;
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{}, {}, {b}}));
  EXPECT_EQ(ix.Stats().stem_pairs_from_cache, 2u);
  // Under another max_documents the cache is not asked: three holders are listed.
  EXPECT_EQ(Holders(ix, pairs, 4), (Docs{{a, b, c}, {a, c}, {b}}));
  EXPECT_EQ(ix.Stats().stem_pairs_from_cache, 2u);

  // Removals make pairs rare again: the cache forgets what it knew.
  ASSERT_OK(ix.Unregister(b));
  ASSERT_OK(ix.Unregister(c));
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{a}, {a}, {}}));
  EXPECT_EQ(ix.Stats().stem_pairs_from_cache, 2u);
  // And by expiry.
  DocumentRecord expiring = Record("d");
  expiring.expires_unix_micros = 1'000'000;
  const DocId d = ix.Register(expiring, Fingerprint(4, {7, 9}), "d")->id;
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{}, {a}, {d}}));
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{}, {a}, {d}}));
  EXPECT_EQ(ix.Stats().stem_pairs_from_cache, 3u);
  auto removed = ix.RemoveExpired(2'000'000, 100);
  ASSERT_OK(removed);
  EXPECT_EQ(*removed, 1u);
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{a}, {a}, {}}));
}

TEST(CommonPairCacheTest, PairsReadBeforeARemovalAreNotKept) {
  CommonPairCache cache;
  EXPECT_FALSE(cache.Contains(5));
  uint64_t generation = cache.generation();
  cache.InsertAll(std::vector<uint32_t>{5, 6, 0}, generation);
  EXPECT_TRUE(cache.Contains(5));
  EXPECT_TRUE(cache.Contains(6));
  EXPECT_FALSE(cache.Contains(0));  // 0 marks an empty slot: never kept
  EXPECT_FALSE(cache.Contains(7));
  cache.ForgetAll();
  EXPECT_FALSE(cache.Contains(5));
  // A lookup that began before the removal was written: what it read is dropped.
  generation = cache.generation();
  cache.ForgetAll();
  cache.InsertAll(std::vector<uint32_t>{8}, generation);
  EXPECT_FALSE(cache.Contains(8));
  // Colliding slots (the same low bits) are probed on.
  generation = cache.generation();
  cache.InsertAll(std::vector<uint32_t>{1u << 20 | 3, 2u << 20 | 3, 3}, generation);
  for (uint32_t p : {1u << 20 | 3, 2u << 20 | 3, 3u}) EXPECT_TRUE(cache.Contains(p)) << p;
  EXPECT_FALSE(cache.Contains(3u << 20 | 3));
}

TEST(StemPairStoreTest, AnIndexWithoutPairsSaysSoAndNeitherKindOpensAsTheOther) {
  TempDir dir;
  {
    auto without = Index::Open(Options(dir.Join("plain"), 0));
    ASSERT_OK(without);
    ASSERT_OK((*without)->Register(Record("a"), Fingerprint(1, {1, 2}), "a"));
    std::vector<std::vector<DocId>> out = {{7}};
    const std::vector<uint32_t> pairs = {1, 2};
    absl::StatusOr<bool> kept = (*without)->LookupStemPairs(pairs, 2, &out);
    ASSERT_OK(kept);
    EXPECT_FALSE(*kept) << "the evidence is unavailable, not absent";
    EXPECT_EQ(out, (Docs{{7}})) << "untouched";
  }
  {
    auto with = Index::Open(Options(dir.Join("pairs"), 2));
    ASSERT_OK(with);
  }
  // The recorded parameters decide: asking for pairs of an index made without them, for
  // none of one made with them, or for another sampling is refused, naming the field.
  for (const auto& [path, pairs] : {std::pair{"plain", 1u}, {"pairs", 0u}, {"pairs", 1u}}) {
    absl::Status refused = Index::Open(Options(dir.Join(path), pairs)).status();
    EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << path << " " << pairs;
    EXPECT_NE(refused.message().find("stem_pairs"), std::string::npos) << refused;
  }
  IndexOptions read_only = Options(dir.Join("pairs"), 2);
  read_only.read_only = true;
  auto opened = Index::Open(read_only);
  ASSERT_OK(opened);
  EXPECT_EQ(Holders(**opened, {1}, 2), (Docs{{}}));
}

// The layout-2 value's codec and merge, as the merge operator runs them.
TEST(StemPairStoreTest, MergedHoldersCountExactlyAndListTheFirstFew) {
  std::vector<std::string> ops;
  for (DocId id : {5, 3, 9, 7, 11, 4}) {
    ops.push_back(stem_pair_codec::AddOperand(1, std::span<const DocId>(&id, 1)));
  }
  std::vector<std::string_view> views(ops.begin(), ops.end());
  std::string value;
  ASSERT_TRUE(stem_pair_codec::Merge(std::nullopt, views, &value));
  StemPairHolders h;
  ASSERT_TRUE(stem_pair_codec::Decode(value, &h));
  EXPECT_EQ(h, (StemPairHolders{6, {3, 5, 7, 9}})) << "every holder counted, the first 4 listed";

  const std::string remove_5 = stem_pair_codec::RemoveOperand(5);
  const std::string remove_11 = stem_pair_codec::RemoveOperand(11);
  const std::vector<std::string_view> removals = {remove_5, remove_11};
  std::string after;
  ASSERT_TRUE(stem_pair_codec::Merge(value, removals, &after));
  ASSERT_TRUE(stem_pair_codec::Decode(after, &h));
  EXPECT_EQ(h, (StemPairHolders{4, {3, 7, 9}})) << "11 was never listed; 4 never will be";
  EXPECT_EQ(stem_pair_codec::Encode(h), after);

  // Consecutive adds combined (as flushes do) merge as they would one by one, with or
  // without a value before them.
  std::string combined;
  ASSERT_TRUE(stem_pair_codec::CombineAdds(views, &combined));
  const std::vector<std::string_view> one = {combined};
  std::string via_combined;
  ASSERT_TRUE(stem_pair_codec::Merge(std::nullopt, one, &via_combined));
  EXPECT_EQ(via_combined, value);
  std::string whole, whole_combined;
  ASSERT_TRUE(stem_pair_codec::Merge(after, views, &whole));
  ASSERT_TRUE(stem_pair_codec::Merge(after, one, &whole_combined));
  EXPECT_EQ(whole, whole_combined);
  const std::vector<std::string_view> with_removal = {views[0], remove_5};
  EXPECT_FALSE(stem_pair_codec::CombineAdds(with_removal, &combined)) << "left to a full merge";
  // No operands are no add: combined, they would be an operand every merge refuses (the
  // storage codec fuzzer found "+\0" poisoning a merge that had nothing to apply).
  EXPECT_FALSE(stem_pair_codec::CombineAdds({}, &combined)) << "nothing to combine";

  // Malformed values and operands: the merge still yields a value, one Decode refuses.
  StemPairHolders bad;
  for (std::string_view v : {std::string_view("\xff"), std::string_view("\x01\x05\x06"),
                             std::string_view("\x05\x01\x02\x03\x04\x05"),
                             std::string_view("\x05\x03\x02")}) {
    EXPECT_FALSE(stem_pair_codec::Decode(v, &bad)) << "value of " << v.size() << " bytes";
    std::string merged;
    EXPECT_FALSE(stem_pair_codec::Merge(v, views, &merged));
    EXPECT_FALSE(stem_pair_codec::Decode(merged, &bad));
  }
  const std::string full = stem_pair_codec::Encode(StemPairHolders{UINT64_MAX, {}});
  std::string merged_full;
  EXPECT_FALSE(stem_pair_codec::Merge(full, views, &merged_full)) << "a count that would wrap";
  for (std::string_view op :
       {std::string_view(""), std::string_view("*\x01"), std::string_view("+"),
        std::string_view("+\x00", 2), std::string_view("+\x01\x02\x03"), std::string_view("-"),
        std::string_view("-\x01\x02")}) {
    std::string merged;
    const std::vector<std::string_view> one = {op};
    EXPECT_FALSE(stem_pair_codec::Merge(value, one, &merged)) << op.size();
    EXPECT_FALSE(stem_pair_codec::Decode(merged, &bad));
  }
}

TEST(StemPairStoreTest, APairWhoseLastHolderWasNeverListedGivesNoEvidence) {
  TempDir dir;
  auto index = Index::Open(Options(dir.Join("db"), 1));
  ASSERT_OK(index);
  Index& ix = **index;
  // Pair 9 held by six documents (four listed), pair 8 by two of them.
  std::vector<DocId> ids;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::vector<uint32_t> pairs = {9};
    if (seed == 2 || seed == 6) pairs.insert(pairs.begin(), 8);
    ids.push_back(ix.Register(Record(std::to_string(seed)), Fingerprint(seed, pairs), "t")->id);
  }
  const std::vector<uint32_t> pairs = {8, 9};
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{}, {}}));
  EXPECT_EQ(Holders(ix, pairs, 3), (Docs{{ids[1], ids[5]}, {}}));
  // Four removed: pair 9 has two holders left, ids[4] and ids[5], neither in the capped list
  // (which held the four removed). It is reported as held by none (its evidence lost), never
  // as held by a removed document.
  for (int i : {0, 1, 2, 3}) ASSERT_OK(ix.Unregister(ids[i]));
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{ids[5]}, {}}));
  EXPECT_EQ(Holders(ix, pairs, 3), (Docs{{ids[5]}, {}}));
  // The same after a compaction (the operands merged into one value) and a reopen.
  ASSERT_OK(ix.Flush());
  ASSERT_OK(ix.Compact());
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{ids[5]}, {}}));
  EXPECT_EQ(Holders(ix, pairs, 3), (Docs{{ids[5]}, {}}));
  ASSERT_OK(ix.Unregister(ids[4]));  // one holder left, ids[5], still unlisted
  index->reset();
  index = Index::Open(Options(dir.Join("db"), 1));
  ASSERT_OK(index);
  EXPECT_EQ(Holders(**index, pairs, 2), (Docs{{ids[5]}, {}}));
  const DocId g = (*index)->Register(Record("g"), Fingerprint(7, {9}), "t")->id;
  EXPECT_EQ(Holders(**index, pairs, 3), (Docs{{ids[5]}, {}})) << "two holders, one unlisted";
  ASSERT_OK((*index)->Unregister(ids[5]));
  EXPECT_EQ(Holders(**index, pairs, 2), (Docs{{}, {g}})) << "g arrived after the cap freed up";
}

// A registration window writes each pair once, its holders in the window in one operand:
// counts stay exact past the listed cap, under removals, as one by one.
TEST(StemPairStoreTest, AWindowOfRegistrationsCountsEachPairsHoldersExactly) {
  TempDir dir;
  auto index = Index::Open(Options(dir.Join("db"), 1));
  ASSERT_OK(index);
  Index& ix = **index;
  // Six of seven documents hold pair 5, the first three pair 9, the fourth pair 11 too.
  std::vector<DocumentRecord> records;
  std::vector<DocumentFingerprint> fps;
  for (uint32_t i = 0; i < 7; ++i) {
    records.push_back(Record("w" + std::to_string(i)));
    std::vector<uint32_t> pairs;
    if (i < 6) pairs.push_back(5);
    if (i < 3) pairs.push_back(9);
    if (i == 3) pairs.push_back(11);
    fps.push_back(Fingerprint(10 + i, pairs));
  }
  std::vector<RegisterItem> items;
  for (size_t i = 0; i < records.size(); ++i) items.push_back({&records[i], &fps[i], "t"});
  std::vector<absl::StatusOr<RegisterOutcome>> out;
  ASSERT_OK(ix.RegisterBatch(items, &out));
  std::vector<DocId> ids;
  for (const auto& o : out) {
    ASSERT_OK(o);
    ids.push_back(o->id);
  }
  const std::vector<uint32_t> pairs = {5, 9, 11};
  // Pair 5: six holders, four listed: no evidence until its count is back within the list.
  EXPECT_EQ(Holders(ix, pairs, 8), (Docs{{}, {ids[0], ids[1], ids[2]}, {ids[3]}}));
  EXPECT_EQ(Holders(ix, pairs, 3), (Docs{{}, {}, {ids[3]}})) << "three holders are common at 3";
  ASSERT_OK(ix.Unregister(ids[1]));
  ASSERT_OK(ix.Unregister(ids[4]));
  EXPECT_EQ(Holders(ix, pairs, 8), (Docs{{}, {ids[0], ids[2]}, {ids[3]}})) << "4 counted, 3 listed";
  ASSERT_OK(ix.Unregister(ids[5]));
  ASSERT_OK(ix.Compact());
  EXPECT_EQ(Holders(ix, pairs, 8), (Docs{{ids[0], ids[2], ids[3]}, {ids[0], ids[2]}, {ids[3]}}));
}

TEST(StemPairStoreTest, HoldersAfterAddsRemovalsCompactionAndReopen) {
  TempDir dir;
  const std::vector<uint32_t> pairs = {1, 2, 3};
  DocId a, b, c;
  {
    auto index = Index::Open(Options(dir.Join("db"), 1));
    ASSERT_OK(index);
    Index& ix = **index;
    a = ix.Register(Record("a"), Fingerprint(1, {1, 2}), "a")->id;
    ASSERT_OK(ix.Flush());  // a's operands in a file, the next in the memtable
    b = ix.Register(Record("b"), Fingerprint(2, {2, 3}), "b")->id;
    c = ix.Register(Record("c"), Fingerprint(3, {3}), "c")->id;
    EXPECT_EQ(Holders(ix, pairs, 3), (Docs{{a}, {a, b}, {b, c}}));
    ASSERT_OK(ix.Unregister(a));
    ASSERT_OK(ix.Compact());
    EXPECT_EQ(Holders(ix, pairs, 3), (Docs{{}, {b}, {b, c}}));
    EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{}, {b}, {}}));
  }
  auto index = Index::Open(Options(dir.Join("db"), 1));
  ASSERT_OK(index);
  EXPECT_EQ(Holders(**index, pairs, 3), (Docs{{}, {b}, {b, c}}));
}

// A flush leaves each pair's holders as merge operands, which every check's read merged
// again; the postings' idle compaction merges the pairs too.
TEST(StemPairStoreTest, TheIdleCompactionMergesThePairs) {
  TempDir dir;
  const std::string path = dir.Join("db");
  std::vector<DocId> ids;
  {
    auto index = Index::Open(Options(path, 1));
    ASSERT_OK(index);
    for (uint32_t i = 0; i < 10; ++i) {
      ids.push_back(
          (*index)->Register(Record(std::to_string(i)), Fingerprint(i + 1, {i, 100}), "t")->id);
    }
    ASSERT_OK((*index)->Flush());
  }
  {
    testing::RawStemPairs raw(path);
    EXPECT_GT(raw.OperandsAndEntries().first, 0u);
  }
  {
    IndexOptions o = Options(path, 1);
    o.idle_compaction_seconds = 1;
    auto index = Index::Open(o);
    ASSERT_OK(index);
    EXPECT_TRUE((*index)->Stats().idle_compaction_due);
    // A second without writes, then the compaction: waited for up to a minute.
    for (int i = 0; i < 600 && (*index)->Stats().idle_compaction_due; ++i) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    ASSERT_FALSE((*index)->Stats().idle_compaction_due);
    EXPECT_EQ(Holders(**index, {0, 5, 9}, 20), (Docs{{ids[0]}, {ids[5]}, {ids[9]}}));
  }
  testing::RawStemPairs raw(path);
  const auto [operands, entries] = raw.OperandsAndEntries();
  EXPECT_GT(entries, 0u);
  EXPECT_EQ(operands, 0u) << "of " << entries;
}

// The index's RocksDB opened directly, for what no Index call writes: an older layout, damage.
using RawDb = testing::RawStemPairs;

TEST(StemPairStoreTest, AnIndexOfTheKeyPerHolderLayoutKeepsWorkingInIt) {
  TempDir dir;
  const std::string path = dir.Join("db");
  {
    auto index = Index::Open(Options(path, 1));
    ASSERT_OK(index);
  }
  {  // What last session's build left: the same index without the recorded layout.
    RawDb raw(path);
    ASSERT_TRUE(raw.db->Delete(rocksdb::WriteOptions(), kStemPairsLayoutKey).ok());
  }
  auto index = Index::Open(Options(path, 1));
  ASSERT_OK(index);
  Index& ix = **index;
  const DocId a = ix.Register(Record("a"), Fingerprint(1, {1, 2}), "a")->id;
  const DocId b = ix.Register(Record("b"), Fingerprint(2, {2, 3}), "b")->id;
  const std::vector<uint32_t> pairs = {1, 2, 3};
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{a}, {}, {b}}));
  ASSERT_OK(ix.Unregister(a));
  EXPECT_EQ(Holders(ix, pairs, 2), (Docs{{}, {b}, {b}}));
  ASSERT_OK(ix.Flush());  // RawDb reads files (testing::RawStemPairs)
  index->reset();
  RawDb raw(path);
  std::string value;
  EXPECT_TRUE(raw.db->Get(rocksdb::ReadOptions(), kStemPairsLayoutKey, &value).IsNotFound());
  for (const std::string& key : raw.Keys()) {
    EXPECT_TRUE(key[0] == 'p' || key[0] == 'd') << "written in its own layout: " << key[0];
  }
}

TEST(StemPairStoreTest, ADamagedValueOrAnUnknownLayoutIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir.Join("db");
  {
    auto index = Index::Open(Options(path, 1));
    ASSERT_OK(index);
    ASSERT_OK((*index)->Register(Record("a"), Fingerprint(1, {0x0a0b0c0d}), "a"));
    ASSERT_OK((*index)->Flush());  // RawDb reads files (testing::RawStemPairs)
  }
  {
    RawDb raw(path);
    std::vector<std::string> keys = raw.Keys();
    ASSERT_EQ(keys.size(), 2u) << "one key for the pair, one for the document's list";
    ASSERT_EQ(keys[0], std::string("P\x0a\x0b\x0c\x0d"));
    ASSERT_TRUE(raw.db->Put(rocksdb::WriteOptions(), raw.pairs, keys[0], "\x01\x05\x06").ok());
  }
  {
    auto index = Index::Open(Options(path, 1));
    ASSERT_OK(index);
    std::vector<std::vector<DocId>> out;
    const std::vector<uint32_t> pairs = {0x0a0b0c0d};
    absl::Status damaged = (*index)->LookupStemPairs(pairs, 2, &out).status();
    EXPECT_EQ(damaged.code(), absl::StatusCode::kDataLoss) << damaged;
    EXPECT_NE(damaged.message().find("P0a0b0c0d"), std::string::npos) << damaged;
  }
  {
    RawDb raw(path);
    ASSERT_TRUE(raw.db->Put(rocksdb::WriteOptions(), kStemPairsLayoutKey, "\x03").ok());
  }
  absl::Status refused = Index::Open(Options(path, 1)).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("layout 3"), std::string::npos) << refused;
}

std::vector<std::vector<uint32_t>> Order(const Index& index, std::vector<DocId> ids) {
  std::vector<std::vector<uint32_t>> out;
  EXPECT_OK(index.GetStemPairOrder(ids, &out));
  return out;
}

TEST(StemPairStoreTest, ADocumentsPairsAreReadInItsTextsOrderUnlessListedBeforeIt) {
  TempDir dir;
  const std::string path = dir.Join("db");
  DocId a = 0, b = 0, older = 0;
  {
    auto index = Index::Open(Options(path, 1));
    ASSERT_OK(index);
    a = (*index)->Register(Record("a"), Fingerprint(1, {0x30, 0x10, 0x20}), "a")->id;
    b = (*index)->Register(Record("b"), Fingerprint(2, {0x20, 0x40}), "b")->id;
    older = (*index)->Register(Record("c"), Fingerprint(3, {0x60, 0x50}), "c")->id;
    EXPECT_EQ(Order(**index, {b, a, 99}), (std::vector<std::vector<uint32_t>>{
                                              {0x20, 0x40}, {0x30, 0x10, 0x20}, {}}));
    ASSERT_OK((*index)->Flush());  // RawDb reads files (testing::RawStemPairs)
  }
  {  // What an earlier build wrote: the list ascending, without its first byte.
    RawDb raw(path);
    std::string key = "d", list = {0, 0, 0, 0x50, 0, 0, 0, 0x60};
    for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>((older >> (8 * i)) & 0xff));
    std::string value;
    ASSERT_TRUE(raw.db->Get(rocksdb::ReadOptions(), raw.pairs, key, &value).ok());
    EXPECT_EQ(value, std::string("\x01") + std::string({0, 0, 0, 0x60, 0, 0, 0, 0x50}));
    ASSERT_TRUE(raw.db->Put(rocksdb::WriteOptions(), raw.pairs, key, list).ok());
  }
  auto index = Index::Open(Options(path, 1));
  ASSERT_OK(index);
  Index& ix = **index;
  EXPECT_EQ(Order(ix, {older, a}),
            (std::vector<std::vector<uint32_t>>{{}, {0x30, 0x10, 0x20}}));  // order unknown
  // Either form is what a removal undoes.
  ASSERT_OK(ix.Unregister(older));
  ASSERT_OK(ix.Unregister(a));
  EXPECT_EQ(Holders(ix, {0x10, 0x20, 0x40, 0x50, 0x60}, 2), (Docs{{}, {b}, {b}, {}, {}}));
  EXPECT_EQ(Order(ix, {a, older, b}),
            (std::vector<std::vector<uint32_t>>{{}, {}, {0x20, 0x40}}));
}

TEST(StemPairStoreTest, ADamagedListOfADocumentsPairsIsDataLossNamingIt) {
  TempDir dir;
  const std::string path = dir.Join("db");
  DocId a = 0;
  {
    auto index = Index::Open(Options(path, 1));
    ASSERT_OK(index);
    a = (*index)->Register(Record("a"), Fingerprint(1, {0x30, 0x10}), "a")->id;
    ASSERT_OK((*index)->Flush());
  }
  {
    RawDb raw(path);
    std::string key = "d";
    for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>((a >> (8 * i)) & 0xff));
    ASSERT_TRUE(raw.db->Put(rocksdb::WriteOptions(), raw.pairs, key, "\x02\x00\x00\x00\x30").ok());
  }
  auto index = Index::Open(Options(path, 1));
  ASSERT_OK(index);
  std::vector<std::vector<uint32_t>> out;
  const std::vector<DocId> ids = {a};
  absl::Status damaged = (*index)->GetStemPairOrder(ids, &out);
  EXPECT_EQ(damaged.code(), absl::StatusCode::kDataLoss) << damaged;
  EXPECT_NE(damaged.message().find("document " + std::to_string(a)), std::string::npos) << damaged;
  EXPECT_EQ((*index)->Unregister(a).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace cops
