#include "storage/stored_hash_filter.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <new>

namespace cops {
namespace {

constexpr uint64_t kMinCapacity = uint64_t{1} << 16;
constexpr uint64_t kBlockBits = 512;  // a 64-byte cache line

// MurmurHash3's 64-bit finalizer: truncated hashes (and the bucket bits they share within a
// bucket) spread over every bit of the block number and the probes.
uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t BlockOf(uint64_t mixed, uint64_t blocks) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(mixed) * blocks) >> 64);
}

// The next probe's bit in the block (0-511): the top 9 bits of a multiplicative sequence
// from the mixed key.
uint32_t NextBit(uint64_t* state) {
  *state *= 0x9e3779b97f4a7c15ULL;
  return static_cast<uint32_t>(*state >> 55);
}

}  // namespace

StoredHashFilter::Segment::Segment(uint64_t cap, uint32_t bits_per_hash)
    : capacity(cap),
      blocks(std::max<uint64_t>(1, (cap * bits_per_hash + kBlockBits - 1) / kBlockBits)),
      block(static_cast<Block*>(mmap(nullptr, blocks * sizeof(Block), PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0))) {
  // Out of address space: as new[] would, fail loudly rather than filter wrongly.
  if (block == MAP_FAILED) throw std::bad_alloc();
}

StoredHashFilter::Segment::~Segment() { munmap(block, blocks * sizeof(Block)); }

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

StoredHashFilter::Segment& StoredHashFilter::SegmentForAdd() {
  uint32_t n = segment_count_.load(std::memory_order_acquire);
  Segment* last = published_[n - 1].load(std::memory_order_acquire);
  if (last->added.fetch_add(1, std::memory_order_relaxed) < last->capacity ||
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

void StoredHashFilter::Add(ChunkHash h) {
  Segment& s = SegmentForAdd();
  uint64_t state = Mix(Key(h));
  std::atomic<uint64_t>* words = s.block[BlockOf(state, s.blocks)].words;
  for (uint32_t i = 0; i < probes_; ++i) {
    const uint32_t bit = NextBit(&state);
    words[bit >> 6].fetch_or(uint64_t{1} << (bit & 63), std::memory_order_relaxed);
  }
}

bool StoredHashFilter::MayContain(ChunkHash h) const {
  const uint64_t mixed = Mix(Key(h));
  const uint32_t n = segment_count_.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < n; ++k) {
    const Segment& s = *published_[k].load(std::memory_order_acquire);
    uint64_t state = mixed;
    const std::atomic<uint64_t>* words = s.block[BlockOf(state, s.blocks)].words;
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
