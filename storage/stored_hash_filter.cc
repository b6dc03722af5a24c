#include "storage/stored_hash_filter.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <new>

namespace cops {
namespace {

constexpr uint64_t kMinCapacity = uint64_t{1} << 16;
constexpr uint64_t kBlockBits = 512;  // a 64-byte cache line
constexpr uint64_t kHugePage = uint64_t{2} << 20;

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // linux/mman.h; glibc 2.36's sys/mman.h lacks it
#endif

// MurmurHash3's 64-bit finalizer: the probes of keys that share their top bits (those of a
// block) differ.
uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// The block of a key left-aligned in 64 bits: its top bits, so that sorted hashes visit the
// blocks in order (keyed hashes are uniform; nothing needs mixing here).
uint64_t BlockOf(uint64_t aligned_key, uint64_t blocks) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(aligned_key) * blocks) >> 64);
}

// The next probe's bit in the block (0-511): the top 9 bits of a multiplicative sequence
// from the mixed key.
uint32_t NextBit(uint64_t* state) {
  *state *= 0x9e3779b97f4a7c15ULL;
  return static_cast<uint32_t>(*state >> 55);
}

// Hashes an add reserves a segment's room for at once, and how far ahead of the hash being
// added its block is prefetched (enough misses in flight to hide memory latency).
constexpr size_t kAddPart = 1024;
constexpr size_t kPrefetchAhead = 8;

}  // namespace

StoredHashFilter::Segment::Segment(uint64_t cap, uint32_t bits_per_hash)
    : capacity(cap),
      blocks(std::max<uint64_t>(1, (cap * bits_per_hash + kBlockBits - 1) / kBlockBits)),
      block(static_cast<Block*>(mmap(nullptr, blocks * sizeof(Block), PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0))),
      written(std::make_unique<std::atomic<uint64_t>[]>((blocks + (uint64_t{1} << 12) - 1) >> 12)) {
  // Out of address space: as new[] would, fail loudly rather than filter wrongly.
  if (block == MAP_FAILED) throw std::bad_alloc();
}

StoredHashFilter::Segment::~Segment() {
  if (collapser.joinable()) collapser.join();
  munmap(block, blocks * sizeof(Block));
}

void StoredHashFilter::Segment::UseHugePagesOnceDense() {
  // Dense: with 4 KiB pages every page is resident by now (~50 adds a page), so 2 MiB pages
  // cost no more memory, and a question or add at random in a filter of gigabytes no longer
  // costs a TLB miss beside its cache miss (hash_filter_bench at 2^30 hashes: adds ~1.6x,
  // questions ~2.5x faster). Before that a small index sized for many documents keeps most of
  // its filter unmapped.
  constexpr uint64_t kDenseShare = 64;
  if (huge.load(std::memory_order_relaxed) ||
      added.load(std::memory_order_relaxed) < capacity / kDenseShare ||
      blocks * sizeof(Block) < kHugePage || huge.exchange(true)) {
    return;
  }
  // New pages come huge where transparent huge pages are "madvise" or "always"; the resident
  // ones are collapsed by a thread of their own (Linux >= 6.1; elsewhere khugepaged does it in
  // time), while adds and questions go on: the kernel copies a range under its page-table lock
  // and the words keep their values. Errors only mean 4 KiB pages: the filter is the same.
  madvise(block, blocks * sizeof(Block), MADV_HUGEPAGE);
  collapser = std::thread([this] { madvise(block, blocks * sizeof(Block), MADV_COLLAPSE); });
}

StoredHashFilter::StoredHashFilter(uint32_t hash_bits, uint32_t bits_per_hash,
                                   uint64_t capacity)
    : hash_bits_(std::clamp<uint32_t>(hash_bits, 1, 64)),
      bits_per_hash_(std::max<uint32_t>(1, bits_per_hash)),
      // ~0.6 probes per bit per hash is the best rate for a blocked filter at 8-16 bits
      // (6 at 10: ~1% false positives).
      probes_(std::clamp<uint32_t>(
          static_cast<uint32_t>(std::lround(0.6 * std::max<uint32_t>(1, bits_per_hash))), 1,
          16)) {
  published_[0].store(new Segment(std::max(capacity, kMinCapacity), bits_per_hash_),
                      std::memory_order_release);
  segment_count_.store(1, std::memory_order_release);
}

StoredHashFilter::~StoredHashFilter() {
  const uint32_t n = segment_count_.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < n; ++k) delete published_[k].load(std::memory_order_relaxed);
}

StoredHashFilter::Segment& StoredHashFilter::SegmentForAdd(uint64_t count) {
  uint32_t n = segment_count_.load(std::memory_order_acquire);
  Segment* last = published_[n - 1].load(std::memory_order_acquire);
  if (last->added.fetch_add(count, std::memory_order_relaxed) < last->capacity ||
      n == kMaxSegments) {
    return *last;
  }
  absl::MutexLock lock(&grow_mu_);
  n = segment_count_.load(std::memory_order_acquire);
  Segment* newest = published_[n - 1].load(std::memory_order_acquire);
  if (newest != last) return *newest;  // another add grew it meanwhile
  newest = new Segment(last->capacity * 2, bits_per_hash_);
  published_[n].store(newest, std::memory_order_release);
  segment_count_.store(n + 1, std::memory_order_release);
  return *newest;
}

void StoredHashFilter::Add(std::span<const ChunkHash> hashes) {
  for (size_t at = 0; at < hashes.size(); at += kAddPart) {
    const std::span<const ChunkHash> part =
        hashes.subspan(at, std::min(kAddPart, hashes.size() - at));
    Segment& s = SegmentForAdd(part.size());
    s.UseHugePagesOnceDense();
    for (size_t i = 0; i < part.size(); ++i) {
      if (i + kPrefetchAhead < part.size()) {
        __builtin_prefetch(&s.block[BlockOf(Aligned(part[i + kPrefetchAhead]), s.blocks)], 1);
      }
      const ChunkHash h = part[i];
      // The block's words to set, each with one atomic OR, skipped when its bits are
      // already set (a hash stored before, or a dense filter).
      uint64_t masks[8] = {};
      uint64_t state = Mix(Key(h));
      for (uint32_t p = 0; p < probes_; ++p) {
        const uint32_t bit = NextBit(&state);
        masks[bit >> 6] |= uint64_t{1} << (bit & 63);
      }
      const uint64_t b = BlockOf(Aligned(h), s.blocks);
      s.MarkWritten(b);
      std::atomic<uint64_t>* words = s.block[b].words;
      for (int w = 0; w < 8; ++w) {
        if (masks[w] != 0 && (words[w].load(std::memory_order_relaxed) & masks[w]) != masks[w]) {
          words[w].fetch_or(masks[w], std::memory_order_relaxed);
        }
      }
    }
  }
}

void StoredHashFilter::Prefetch(ChunkHash h) const {
  const uint32_t n = segment_count_.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < n; ++k) {
    const Segment& s = *published_[k].load(std::memory_order_acquire);
    const uint64_t b = BlockOf(Aligned(h), s.blocks);
    if (s.Written(b)) __builtin_prefetch(&s.block[b], 0);
  }
}

bool StoredHashFilter::MayContain(ChunkHash h) const {
  const uint64_t mixed = Mix(Key(h));
  const uint32_t n = segment_count_.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < n; ++k) {
    const Segment& s = *published_[k].load(std::memory_order_acquire);
    const uint64_t b = BlockOf(Aligned(h), s.blocks);
    if (!s.Written(b)) continue;  // all zero, and left unread
    uint64_t state = mixed;
    const std::atomic<uint64_t>* words = s.block[b].words;
    bool all = true;
    for (uint32_t i = 0; i < probes_ && all; ++i) {
      const uint32_t bit = NextBit(&state);
      all = (words[bit >> 6].load(std::memory_order_relaxed) >> (bit & 63)) & 1;
    }
    if (all) return true;
  }
  return false;
}

uint64_t StoredHashFilter::bytes() const {
  uint64_t total = 0;
  const uint32_t n = segment_count_.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < n; ++k) total += published_[k].load()->blocks * sizeof(Block);
  return total;
}

}  // namespace cops
