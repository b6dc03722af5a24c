#include "storage/stored_hash_filter.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cops {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Share of `count` hashes never added (seeds from `from`) the filter lets through.
double FalsePositiveRate(const StoredHashFilter& f, uint64_t from, uint64_t count) {
  uint64_t passed = 0;
  for (uint64_t i = 0; i < count; ++i) passed += f.MayContain(Mix(from + i));
  return static_cast<double>(passed) / static_cast<double>(count);
}

// At its capacity and 10 bits per hash, the filter answers every added hash and about 1%
// of the others (a blocked Bloom filter's rate at 6 probes: a filter whose block or probes
// came from too few of the key's bits would pass far more).
TEST(StoredHashFilterTest, AFullSegmentFindsEveryHashAddedAndPassesAboutOnePercentOfOthers) {
  constexpr uint64_t kHashes = 1 << 17;
  StoredHashFilter f(/*hash_bits=*/64, /*bits_per_hash=*/10, kHashes);
  for (uint64_t i = 0; i < kHashes; ++i) f.Add(Mix(i));
  for (uint64_t i = 0; i < kHashes; ++i) ASSERT_TRUE(f.MayContain(Mix(i))) << i;
  EXPECT_EQ(f.segments(), 1u);
  EXPECT_EQ(f.bytes(), kHashes * 10 / 8);
  EXPECT_LT(FalsePositiveRate(f, uint64_t{1} << 40, 400'000), 0.02);
}

// Beyond its capacity, adds from two threads at once go to new segments, each twice the
// last: nothing added is ever missed, and the rate stays the segments' rates summed.
TEST(StoredHashFilterTest, GrowingPastItsCapacityUnderConcurrentAddsLosesNoHash) {
  StoredHashFilter f(/*hash_bits=*/64, /*bits_per_hash=*/10, /*capacity=*/1000);
  constexpr uint64_t kPerThread = 250'000;  // 2^16 + 2^17 + 2^18 hold 458,752
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 2; ++t) {
    threads.emplace_back([&f, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) f.Add(Mix(t * kPerThread + i));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(f.segments(), 4u);
  for (uint64_t i = 0; i < 2 * kPerThread; ++i) ASSERT_TRUE(f.MayContain(Mix(i))) << i;
  EXPECT_LT(FalsePositiveRate(f, uint64_t{1} << 40, 200'000), 0.04);
}

// Minor page faults of this process so far. A first read of an untouched page faults on
// every kernel, whether it then maps the shared zero page (resident memory unchanged) or a
// page of its own (as a 6.18 paravirtualised guest does), so faults show an unread page stayed
// unread where resident memory would not.
uint64_t MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_minflt);
}

// A filter sized for far more than it holds (a new index's, for 10^6 documents) keeps only
// the pages its adds wrote: a million questions about hashes never added (a large clean
// check's) leave its other pages unread.
TEST(StoredHashFilterTest, QuestionsLeaveThePagesNoAddWroteUnmapped) {
  constexpr uint64_t kCapacity = uint64_t{1} << 24;  // 20 MiB at 10 bits per hash: 5,120 pages
  StoredHashFilter f(/*hash_bits=*/64, /*bits_per_hash=*/10, kCapacity);
  for (uint64_t i = 0; i < 200; ++i) f.Add(Mix(i));
  const uint64_t before = MinorFaults();
  for (uint64_t i = 0; i < 200; ++i) f.Prefetch(Mix(i));
  for (uint64_t i = 0; i < 200; ++i) ASSERT_TRUE(f.MayContain(Mix(i))) << i;
  EXPECT_LT(FalsePositiveRate(f, uint64_t{1} << 40, 1'000'000), 0.001);
  EXPECT_LT(MinorFaults() - before, 64u) << "pages of a " << (f.bytes() >> 20) << " MiB filter";
}

// Hashes added in sorted batches (as PostingsStore adds a window's, and larger than the part
// an add reserves at once) are found like single adds, past the capacity too, and a filter
// filled that way passes about as few others: a block follows the hash's top bits, which
// sorted batches visit in order.
TEST(StoredHashFilterTest, SortedBatchesAreFoundAndGrowTheFilterLikeSingleAdds) {
  constexpr uint64_t kHashes = 1 << 17;
  StoredHashFilter at_capacity(/*hash_bits=*/40, /*bits_per_hash=*/10, kHashes);
  StoredHashFilter growing(/*hash_bits=*/40, /*bits_per_hash=*/10, /*capacity=*/1000);
  auto add_sorted_batches = [](StoredHashFilter* f, uint64_t count) {
    std::vector<uint64_t> batch;
    for (uint64_t from = 0; from < count; from += 5000) {
      batch.clear();
      for (uint64_t i = from; i < std::min(from + 5000, count); ++i) batch.push_back(Mix(i));
      std::sort(batch.begin(), batch.end());
      f->Add(batch);
    }
  };
  add_sorted_batches(&at_capacity, kHashes);
  add_sorted_batches(&growing, 3 * kHashes);
  for (uint64_t i = 0; i < kHashes; ++i) ASSERT_TRUE(at_capacity.MayContain(Mix(i))) << i;
  for (uint64_t i = 0; i < 3 * kHashes; ++i) ASSERT_TRUE(growing.MayContain(Mix(i))) << i;
  EXPECT_EQ(at_capacity.segments(), 1u);
  EXPECT_EQ(growing.segments(), 3u);  // 2^16 + 2^17 + 2^18 hold 3 x 2^17
  EXPECT_LT(FalsePositiveRate(at_capacity, uint64_t{1} << 40, 400'000), 0.02);
  EXPECT_LT(FalsePositiveRate(growing, uint64_t{1} << 40, 200'000), 0.04);
}

// A segment of megabytes asks for huge pages once dense (and collapses the pages it has
// where the kernel can): whatever the kernel does with the request, no hash added before or
// after it is lost.
TEST(StoredHashFilterTest, ADenseSegmentOnHugePagesLosesNoHash) {
  constexpr uint64_t kCapacity = 1 << 22;  // 5 MiB at 10 bits: dense after 2^16 adds
  StoredHashFilter f(/*hash_bits=*/40, /*bits_per_hash=*/10, kCapacity);
  constexpr uint64_t kHashes = 300'000;
  std::vector<uint64_t> batch;
  for (uint64_t from = 0; from < kHashes; from += 10'000) {
    batch.clear();
    for (uint64_t i = from; i < from + 10'000; ++i) batch.push_back(Mix(i));
    std::sort(batch.begin(), batch.end());
    f.Add(batch);
  }
  EXPECT_EQ(f.segments(), 1u);
  for (uint64_t i = 0; i < kHashes; ++i) ASSERT_TRUE(f.MayContain(Mix(i))) << i;
  EXPECT_LT(FalsePositiveRate(f, uint64_t{1} << 40, 200'000), 0.01);
}

// A filter of 40-bit hashes (an index keeping the top 40 bits) keys on those bits alone:
// a hash differing below them is the same stored hash, one differing in them is not.
TEST(StoredHashFilterTest, KeysOnTheTopHashBitsAnIndexKeeps) {
  StoredHashFilter f(/*hash_bits=*/40, /*bits_per_hash=*/10, /*capacity=*/1 << 16);
  int other_top_passed = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const uint64_t h = Mix(i);
    f.Add(h);
    EXPECT_TRUE(f.MayContain(h ^ 0xFFFFFF)) << i;  // the low 24 bits dropped
  }
  for (uint64_t i = 0; i < 1000; ++i) other_top_passed += f.MayContain(Mix(i) ^ (1ull << 30));
  EXPECT_LT(other_top_passed, 30);
}

}  // namespace
}  // namespace cops
