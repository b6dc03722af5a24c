#ifndef COPS_TESTS_STORAGE_RAW_STEM_PAIRS_H_
#define COPS_TESTS_STORAGE_RAW_STEM_PAIRS_H_

// A closed index's RocksDB opened raw, every column family with default options but the stem
// pairs' (whose merge operator its values need): for tests that read or change what an index
// keeps underneath its API (its meta data in the default family, its stem pairs' keys).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "rocksdb/table_properties.h"
#include "storage/stem_pair_store.h"

namespace cops::testing {

// REQUIRES: the index was flushed before it closed. Its write-ahead log holds merges of
// the other families, whose merge operators are not here: replaying it stops at the first,
// and what a batch wrote after one (the stem pairs come after the postings) is not seen.
struct RawStemPairs {
  explicit RawStemPairs(const std::string& path) {
    std::vector<std::string> names;
    EXPECT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> d;
    for (const std::string& n : names) {
      d.emplace_back(n, n == kStemPairsCf ? StemPairsCfOptions(1 << 20, nullptr)
                                          : rocksdb::ColumnFamilyOptions());
    }
    rocksdb::DB* opened = nullptr;
    EXPECT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), path, d, &handles, &opened).ok());
    db.reset(opened);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == kStemPairsCf) pairs = handles[i];
    }
  }
  ~RawStemPairs() {
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  }
  RawStemPairs(const RawStemPairs&) = delete;
  RawStemPairs& operator=(const RawStemPairs&) = delete;

  // The stem pairs family's keys, in order.
  std::vector<std::string> Keys() const {
    std::vector<std::string> keys;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), pairs));
    for (it->SeekToFirst(); it->Valid(); it->Next()) keys.push_back(it->key().ToString());
    return keys;
  }

  // How many entries of the stem pairs family's files are merge operands (a read merges
  // each again), and how many entries they hold.
  std::pair<uint64_t, uint64_t> OperandsAndEntries() const {
    rocksdb::TablePropertiesCollection tables;
    EXPECT_TRUE(db->GetPropertiesOfAllTables(pairs, &tables).ok());
    uint64_t operands = 0, entries = 0;
    for (const auto& [file, props] : tables) {
      operands += props->num_merge_operands;
      entries += props->num_entries;
    }
    return {operands, entries};
  }

  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::ColumnFamilyHandle* pairs = nullptr;
};

}  // namespace cops::testing

#endif  // COPS_TESTS_STORAGE_RAW_STEM_PAIRS_H_
