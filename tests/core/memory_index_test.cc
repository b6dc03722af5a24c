#include "core/memory_index.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

TEST(MemoryIndexTest, DocumentFrequencyCountsDistinctDocuments) {
  DocumentFingerprint fp;
  fp.total_chunks = 3;
  fp.chunks = {{.hash = 7, .ordinal = 0}, {.hash = 7, .ordinal = 1}, {.hash = 9, .ordinal = 2}};
  MemoryIndex index;
  index.Register(1, fp);
  index.Register(2, fp);
  std::vector<ChunkHash> hashes = {7, 9, 11};
  std::vector<PostingList> out;
  ASSERT_OK(index.Lookup(hashes, &out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].doc_frequency, 2u);
  EXPECT_EQ(out[0].postings.size(), 4u);
  EXPECT_EQ(out[1].doc_frequency, 2u);
  EXPECT_TRUE(out[2].postings.empty());
  EXPECT_EQ(index.StoredChunks(1), 3u);
  EXPECT_EQ(index.stored_chunks(), 6u);
}

}  // namespace
}  // namespace cops
