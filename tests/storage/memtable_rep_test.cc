// The postings' memtable (storage/memtable_rep.h) inside a real RocksDB: whatever order the
// keys come in (ascending runs as registration writes them, descending, random, runs with
// jumps back), point reads, scans both ways and seeks answer as a sorted map would, before
// and after a flush; readers on other threads see every acknowledged write while one writer
// inserts.

#include "storage/memtable_rep.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/write_batch.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

std::string Key(uint64_t n) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(n >> (56 - 8 * i));
  return k;
}

uint64_t Number(const std::string& key) {
  uint64_t n = 0;
  for (char c : key) n = n << 8 | static_cast<unsigned char>(c);
  return n;
}

std::unique_ptr<rocksdb::DB> OpenDb(const std::string& path) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.allow_concurrent_memtable_write = false;
  options.memtable_factory = std::make_shared<FingerSkipListFactory>();
  options.write_buffer_size = 256 << 20;  // everything stays in the memtable until flushed
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::unique_ptr<rocksdb::DB>(raw);
}

// Reads `db` back in every way and compares with `model`.
void ExpectSameAs(rocksdb::DB* db, const std::map<std::string, std::string>& model,
                  std::mt19937_64& rng) {
  for (const auto& [k, v] : model) {
    std::string got;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), k, &got).ok()) << "missing key";
    ASSERT_EQ(got, v);
  }
  std::string absent;
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), Key(~uint64_t{0}), &absent).IsNotFound());

  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    ASSERT_NE(m, model.end());
    ASSERT_EQ(it->key().ToString(), m->first);
    ASSERT_EQ(it->value().ToString(), m->second);
  }
  EXPECT_EQ(m, model.end());
  auto r = model.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
    ASSERT_NE(r, model.rend());
    ASSERT_EQ(it->key().ToString(), r->first);
  }
  EXPECT_EQ(r, model.rend());

  for (int probe = 0; probe < 2000; ++probe) {
    const std::string target = Key(rng() % (uint64_t{1} << 40));
    it->Seek(target);
    auto lower = model.lower_bound(target);
    ASSERT_EQ(it->Valid(), lower != model.end());
    if (it->Valid()) {
      ASSERT_EQ(it->key().ToString(), lower->first);
    }
    it->SeekForPrev(target);
    auto upper = model.upper_bound(target);
    ASSERT_EQ(it->Valid(), upper != model.begin());
    if (it->Valid()) {
      ASSERT_EQ(it->key().ToString(), std::prev(upper)->first);
    }
  }
}

TEST(FingerSkipListTest, AnswersAsASortedMapInAnyInsertOrder) {
  enum class Order { kAscendingRuns, kDescending, kRandom, kRunsWithJumpsBack };
  for (Order order :
       {Order::kAscendingRuns, Order::kDescending, Order::kRandom, Order::kRunsWithJumpsBack}) {
    SCOPED_TRACE(static_cast<int>(order));
    testing::TempDir dir;
    std::unique_ptr<rocksdb::DB> db = OpenDb(dir.path().string());
    ASSERT_NE(db, nullptr);
    std::mt19937_64 rng(static_cast<uint64_t>(order) + 1);
    std::map<std::string, std::string> model;
    // Batches of keys sorted as a registration window's are, each batch among the earlier
    // ones' keys; some keys written again (a newer entry of the same user key).
    for (int batch = 0; batch < 40; ++batch) {
      std::vector<uint64_t> keys(1 + rng() % 1500);
      for (uint64_t& k : keys) k = rng() % (uint64_t{1} << 40);
      if (batch % 5 == 4 && !model.empty()) {
        for (size_t i = 0; i < keys.size(); i += 3) {
          keys[i] =
              Number(std::next(model.begin(), static_cast<long>(rng() % model.size()))->first);
        }
      }
      switch (order) {
        case Order::kAscendingRuns:
          std::sort(keys.begin(), keys.end());
          break;
        case Order::kDescending:
          std::sort(keys.rbegin(), keys.rend());
          break;
        case Order::kRandom:
          break;
        case Order::kRunsWithJumpsBack:
          std::sort(keys.begin(), keys.end());
          for (size_t i = 0; i + 1 < keys.size(); i += 50) std::swap(keys[i], keys[i + 1]);
          break;
      }
      rocksdb::WriteBatch wb;
      for (uint64_t k : keys) {
        const std::string value = "v" + std::to_string(batch) + "." + std::to_string(k);
        ASSERT_TRUE(wb.Put(Key(k), value).ok());
        model[Key(k)] = value;
      }
      ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &wb).ok());
    }
    ExpectSameAs(db.get(), model, rng);  // from the memtable
    ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
    ExpectSameAs(db.get(), model, rng);  // from the file the memtable was written to
  }
}

TEST(FingerSkipListTest, ReadersSeeEveryAcknowledgedWriteWhileOneWriterInserts) {
  testing::TempDir dir;
  std::unique_ptr<rocksdb::DB> db = OpenDb(dir.path().string());
  ASSERT_NE(db, nullptr);
  constexpr uint64_t kKeys = 60000;
  std::atomic<uint64_t> acknowledged{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      while (acknowledged.load() < kKeys && !failed.load()) {
        const uint64_t known = acknowledged.load();
        if (known == 0) continue;
        // Keys 0, 2, 4, ... in order: each written one is there with its value.
        const uint64_t n = 2 * (rng() % known);
        std::string got;
        if (!db->Get(rocksdb::ReadOptions(), Key(n), &got).ok() || got != std::to_string(n)) {
          failed = true;
        }
        // A scan sees sorted keys and at least the acknowledged ones.
        if (rng() % 64 == 0) {
          std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
          uint64_t seen = 0;
          std::string last;
          for (it->SeekToFirst(); it->Valid(); it->Next(), ++seen) {
            if (!last.empty() && it->key().ToString() <= last) failed = true;
            last = it->key().ToString();
          }
          if (seen < known) failed = true;
        }
      }
    });
  }
  for (uint64_t k = 0; k < kKeys; k += 100) {
    rocksdb::WriteBatch wb;
    for (uint64_t i = k; i < k + 100; ++i)
      ASSERT_TRUE(wb.Put(Key(2 * i), std::to_string(2 * i)).ok());
    ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &wb).ok());
    acknowledged = k + 100;
  }
  for (std::thread& r : readers) r.join();
  EXPECT_FALSE(failed.load());
}

}  // namespace
}  // namespace cops
