#ifndef COPS_STORAGE_STORED_HASH_FILTER_H_
#define COPS_STORAGE_STORED_HASH_FILTER_H_

// An in-memory filter of the chunk hashes a bucketed index stores, asked before a lookup
// reads a bucket. Most hashes a check looks up are stored nowhere (a clean check's: all of
// them), but every bucket exists, so RocksDB's per-key bloom filters, which answer such
// misses for per-hash postings without reading a block, pass every bucket key; without this
// filter a miss costs a block-index search, a block-cache lookup and a bucket scan
// (docs/performance.md). Internal to storage/ (PostingsStore).
//
// Not kept on disk: PostingsStore fills it from the buckets after every open.
//
// A cache-local ("blocked") Bloom filter: a hash sets k bits of one 64-byte block, so a
// question costs one cache miss. Hand-written (~100 lines) because what Debian ships does not
// fit: libbloom 1.6 counts bits in an int (at most 256 MiB, too small for 10^9 hashes) and
// is not safe for concurrent adds, and RocksDB's filter builders are not in its public API.
//
// The filter only grows: a removed document's hashes stay (a wasted bucket read, never a
// missed one). Beyond its capacity it adds a segment twice as large; a question asks every
// segment, so each full segment adds its false-positive rate (~1% at 10 bits per hash) until
// the next open sizes one segment for everything stored.
//
// Thread-safety: Add and MayContain are safe concurrently (atomic words; a set bit stays
// set; segments are never freed before the filter).

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "core/match.h"

namespace cops {

class StoredHashFilter {
 public:
  // Keys on the top `hash_bits` of a chunk hash (what a bucketed index stores: two hashes
  // that agree there share their postings); `bits_per_hash` >= 1 sizes the segments;
  // `capacity` hashes fit the first segment at that rate.
  StoredHashFilter(uint32_t hash_bits, uint32_t bits_per_hash, uint64_t capacity);
  ~StoredHashFilter();
  StoredHashFilter(const StoredHashFilter&) = delete;
  StoredHashFilter& operator=(const StoredHashFilter&) = delete;

  // Fastest with hashes sorted (a hash's block is its top bits, so sorted hashes sweep the
  // blocks in order), as PostingsStore adds a batch's after sorting them by bucket.
  void Add(std::span<const ChunkHash> hashes);
  void Add(ChunkHash h) { Add(std::span<const ChunkHash>(&h, 1)); }
  // False only if `h` (its top hash_bits) was never added.
  bool MayContain(ChunkHash h) const;
  // Starts loading h's blocks into the cache: a caller that asks about many hashes does so a
  // few questions ahead, so that their cache misses overlap.
  void Prefetch(ChunkHash h) const;

  uint64_t bytes() const;  // memory of all segments
  uint32_t segments() const { return segment_count_.load(std::memory_order_acquire); }

 private:
  // One cache line (over-aligned: new[] aligns it).
  struct alignas(64) Block {
    std::atomic<uint64_t> words[8];
  };
  // Mapped anonymous memory, only its written pages resident, so that a filter sized for
  // 10^6 documents costs a small index little memory; once dense it asks for huge pages.
  // Questions read no page that no add wrote: reading one would make it resident too, since
  // not every kernel maps the shared zero page there (a 6.18 paravirtualised guest gave a
  // 4 MiB check's lookups the whole 150 MiB of a fresh index's filter).
  struct Segment {
    Segment(uint64_t capacity, uint32_t bits_per_hash);
    ~Segment();
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;
    // Huge pages once enough hashes are added that every 4 KiB page is resident anyway.
    void UseHugePagesOnceDense();
    // Whether an add wrote to the 4 KiB page of block `b` (64 blocks a page), or may have:
    // once dense, every page was written (~50 adds a page), and the map goes unread.
    bool Written(uint64_t b) const {
      return huge.load(std::memory_order_relaxed) ||
             ((written[b >> 12].load(std::memory_order_relaxed) >> ((b >> 6) & 63)) & 1);
    }
    void MarkWritten(uint64_t b) {
      const uint64_t bit = uint64_t{1} << ((b >> 6) & 63);
      if ((written[b >> 12].load(std::memory_order_relaxed) & bit) == 0) {
        written[b >> 12].fetch_or(bit, std::memory_order_relaxed);
      }
    }
    const uint64_t capacity;  // hashes at bits_per_hash
    const uint64_t blocks;
    Block* block;
    // A bit per page of `block`, set before an add writes there: 4 KB for 10^8 hashes.
    const std::unique_ptr<std::atomic<uint64_t>[]> written;
    std::atomic<uint64_t> added{0};
    std::atomic<bool> huge{false};
    // Collapses the resident pages into huge ones (a second of kernel work for a filter of
    // gigabytes) off the adding thread, the registration writer; joined before the unmap.
    std::thread collapser;
  };
  // 2x growth from at least 2^16 hashes: 40 segments outgrow any index.
  static constexpr size_t kMaxSegments = 40;

  // The segment the next `count` adds go to, adding one when the last is full.
  Segment& SegmentForAdd(uint64_t count);
  uint64_t Key(ChunkHash h) const { return h >> (64 - hash_bits_); }
  // The key's bits where the hash has them, the rest zero.
  uint64_t Aligned(ChunkHash h) const { return Key(h) << (64 - hash_bits_); }

  const uint32_t hash_bits_;
  const uint32_t bits_per_hash_;
  const uint32_t probes_;  // bits set per hash
  absl::Mutex grow_mu_;  // serializes adding a segment
  // Owned segments: published_[0, count) are set and never change again until destruction.
  std::atomic<uint32_t> segment_count_{0};
  std::array<std::atomic<Segment*>, kMaxSegments> published_{};
};

}  // namespace cops

#endif  // COPS_STORAGE_STORED_HASH_FILTER_H_
