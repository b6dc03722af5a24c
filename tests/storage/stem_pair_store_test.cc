#include "storage/stem_pair_store.h"

#include <string>
#include <vector>

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
// given stem pairs.
DocumentFingerprint Fingerprint(uint64_t seed, std::vector<uint32_t> pairs) {
  DocumentFingerprint fp;
  for (uint32_t j = 0; j < 4; ++j) {
    fp.chunks.push_back(Chunk{seed * 1000 + j, j, 10 * j, 10 * j + 7, j, j + 5});
  }
  fp.total_chunks = 4;
  fp.sha256[0] = static_cast<uint8_t>(seed);
  fp.input_bytes = 50;
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

}  // namespace
}  // namespace cops
