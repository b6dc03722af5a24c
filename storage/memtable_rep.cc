#include "storage/memtable_rep.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace cops {
namespace {

using rocksdb::KeyHandle;
using rocksdb::MemTableRep;
using rocksdb::Slice;

// A node is its entry (the encoded key and value RocksDB packs: "the key" below), with its
// height and its next pointers laid out before it, lowest level nearest:
//   [next[h-1]] ... [next[1]] [next[0]] [height] [entry ...]
// so that a node is a pointer to its entry, which is what RocksDB hands back to Insert().
constexpr int kMaxHeight = 12;      // 4^12 = 16.7 million entries at the expected heights
constexpr uint32_t kBranching = 4;  // a node reaches the next level with probability 1/4

using Link = std::atomic<const char*>;

Link* Links(const char* node) {
  // The pointers sit below the height word; const_cast: the links are the mutable part.
  return reinterpret_cast<Link*>(const_cast<char*>(node) - sizeof(uint64_t));
}
Link& Next(const char* node, int level) { return *(Links(node) - 1 - level); }
int HeightOf(const char* node) {
  uint64_t h;
  std::memcpy(&h, node - sizeof(uint64_t), sizeof(h));
  return static_cast<int>(h);
}

// The memtable key (varint32 length, then the internal key) of a point lookup.
// MemTableRep::Get's default, the only way to a LookupKey's key without RocksDB's internal
// headers, makes an iterator per lookup and never frees it (RocksDB 7.8.3, db/memtable.cc),
// so Get is ours and reads the key as RocksDB lays LookupKey out (db/lookup_key.h, not
// installed; unchanged since LevelDB): three pointers, start_ (the memtable key), kstart_
// (its internal key) and end_. The three are checked against each other before use; a
// RocksDB that lays it out otherwise stops copsd at its first lookup, naming this.
const char* MemtableKeyOf(const rocksdb::LookupKey& lookup) {
  const char* p[3];
  std::memcpy(p, static_cast<const void*>(&lookup), sizeof(p));
  bool ok = p[0] != nullptr && p[0] < p[1] && p[1] - p[0] <= 5 && p[1] < p[2];
  if (ok) {
    uint32_t length = 0;
    const char* q = p[0];
    for (int shift = 0; q < p[1]; shift += 7, ++q) {
      length |= static_cast<uint32_t>(static_cast<unsigned char>(*q) & 0x7f) << shift;
    }
    ok = (static_cast<unsigned char>(p[1][-1]) & 0x80) == 0 &&
         static_cast<size_t>(p[2] - p[1]) == length;
  }
  if (!ok) {
    std::fprintf(stderr,
                 "storage/memtable_rep.cc: this RocksDB lays out LookupKey differently from "
                 "7.8.3; FingerSkipList::Get must be updated\n");
    std::abort();
  }
  return p[0];
}

class FingerSkipList final : public MemTableRep {
 public:
  FingerSkipList(const KeyComparator& compare, rocksdb::Allocator* allocator)
      : MemTableRep(allocator), compare_(compare) {
    head_ = NewNode(kMaxHeight, 0);
    for (int i = 0; i < kMaxHeight; ++i) {
      Next(head_, i).store(nullptr, std::memory_order_relaxed);
      finger_[i] = head_;
    }
  }

  KeyHandle Allocate(const size_t len, char** buf) override {
    *buf = NewNode(RandomHeight(), len);
    return static_cast<KeyHandle>(*buf);
  }

  void Insert(KeyHandle handle) override { InsertKey(handle); }
  // The list keeps its own finger: RocksDB's hints are not needed.
  void InsertWithHint(KeyHandle handle, void** /*hint*/) override { InsertKey(handle); }
  bool InsertKeyWithHint(KeyHandle handle, void** /*hint*/) override { return InsertKey(handle); }

  bool InsertKey(KeyHandle handle) override {
    const char* x = static_cast<const char*>(handle);
    const int height = HeightOf(x);
    const int max_height = max_height_.load(std::memory_order_relaxed);
    const char* prev[kMaxHeight];
    if (last_ != nullptr && compare_(last_, x) < 0) {
      // After the last insert. finger_[i] is the last node of level i at or before it, so
      // a level whose finger's successor lies beyond x has no node between the two keys,
      // nor has any level above it: climb from level 0 to the first such level, then walk
      // down from there as a search from the head would. Keys in order cost a comparison
      // or two, keys a few entries apart a few levels.
      int level = 0;
      while (level < max_height - 1 && !Beyond(x, finger_[level], level)) ++level;
      const char* at = finger_[level];
      for (int i = level; i >= 0; --i) {
        at = WalkRight(at, x, i);
        prev[i] = at;
      }
      for (int i = level + 1; i < max_height; ++i) prev[i] = finger_[i];
    } else {
      const char* at = head_;
      for (int i = max_height - 1; i >= 0; --i) {
        at = WalkRight(at, x, i);
        prev[i] = at;
      }
    }
    const char* after = Next(prev[0], 0).load(std::memory_order_relaxed);
    if (after != nullptr && compare_(after, x) == 0) return false;  // duplicate key
    for (int i = max_height; i < height; ++i) prev[i] = head_;
    if (height > max_height) {
      // Readers that see the new height before the links find null there: the head's
      // levels above the old height are empty.
      max_height_.store(height, std::memory_order_relaxed);
    }
    for (int i = 0; i < height; ++i) {
      Next(x, i).store(Next(prev[i], i).load(std::memory_order_relaxed), std::memory_order_relaxed);
      Next(prev[i], i).store(x, std::memory_order_release);  // publishes x at level i
    }
    const int levels = std::max(height, max_height);
    for (int i = 0; i < levels; ++i) finger_[i] = i < height ? x : prev[i];
    last_ = x;
    return true;
  }

  void Get(const rocksdb::LookupKey& lookup, void* callback_args,
           bool (*callback_func)(void* arg, const char* entry)) override {
    for (const char* n = FindGreaterOrEqual(MemtableKeyOf(lookup));
         n != nullptr && callback_func(callback_args, n);
         n = Next(n, 0).load(std::memory_order_acquire)) {
    }
  }

  bool Contains(const char* key) const override {
    const char* x = FindGreaterOrEqual(key);
    return x != nullptr && compare_(x, key) == 0;
  }

  // The memtable's arena holds every byte; it reports them itself.
  size_t ApproximateMemoryUsage() override { return 0; }

  class Iterator final : public MemTableRep::Iterator {
   public:
    explicit Iterator(const FingerSkipList* list) : list_(list) {}
    bool Valid() const override { return node_ != nullptr; }
    const char* key() const override { return node_; }
    void Next() override { node_ = cops::Next(node_, 0).load(std::memory_order_acquire); }
    void Prev() override {
      node_ = list_->FindLessThan(node_);
      if (node_ == list_->head_) node_ = nullptr;
    }
    void Seek(const Slice& internal_key, const char* memtable_key) override {
      node_ = memtable_key != nullptr ? list_->FindGreaterOrEqual(memtable_key)
                                      : list_->FindGreaterOrEqual(internal_key);
    }
    void SeekForPrev(const Slice& internal_key, const char* memtable_key) override {
      Seek(internal_key, memtable_key);
      if (!Valid()) {
        SeekToLast();
      }
      while (Valid() && (memtable_key != nullptr ? list_->compare_(node_, memtable_key)
                                                 : list_->compare_(node_, internal_key)) > 0) {
        Prev();
      }
    }
    void SeekToFirst() override {
      node_ = cops::Next(list_->head_, 0).load(std::memory_order_acquire);
    }
    void SeekToLast() override {
      node_ = list_->FindLast();
      if (node_ == list_->head_) node_ = nullptr;
    }

   private:
    const FingerSkipList* const list_;
    const char* node_ = nullptr;
  };

  MemTableRep::Iterator* GetIterator(rocksdb::Arena* arena) override {
    if (arena == nullptr) return new Iterator(this);
    // With an arena RocksDB only runs the destructor, and frees the arena itself. That
    // arena's class is not in RocksDB's public headers, and this memtable's own arena must
    // not grow once the memtable is immutable (its size was counted then): the iterator goes
    // into storage this list keeps until it is freed. Such iterators are few over a
    // memtable's life: its flush, and the scans of the postings at open (the filter, the
    // cache warm-up), a few dozen bytes each.
    return new (TakeSlot()) Iterator(this);
  }

 private:
  struct Slot {
    alignas(Iterator) unsigned char bytes[sizeof(Iterator)];
  };

  void* TakeSlot() {
    std::lock_guard<std::mutex> lock(slots_mu_);
    slots_.push_back(std::make_unique<Slot>());
    return slots_.back()->bytes;
  }

  // A node of `height` levels with room for a `len`-byte entry, from the memtable's arena;
  // 8-byte aligned, so that its links are whole atomic words.
  char* NewNode(int height, size_t len) {
    const size_t prefix = sizeof(Link) * static_cast<size_t>(height) + sizeof(uint64_t);
    char* raw = nullptr;
    MemTableRep::Allocate(prefix + len + alignof(Link) - 1, &raw);
    const size_t misalignment = reinterpret_cast<uintptr_t>(raw) % alignof(Link);
    char* node = raw + (misalignment == 0 ? 0 : alignof(Link) - misalignment) + prefix;
    const uint64_t h = static_cast<uint64_t>(height);
    std::memcpy(node - sizeof(uint64_t), &h, sizeof(h));
    for (int i = 0; i < height; ++i) new (&Next(node, i)) Link(nullptr);
    return node;
  }

  int RandomHeight() {
    int height = 1;
    while (height < kMaxHeight && (NextRandom() % kBranching) == 0) ++height;
    return height;
  }

  uint32_t NextRandom() {
    // xorshift32: only the one writer draws heights.
    random_ ^= random_ << 13;
    random_ ^= random_ >> 17;
    random_ ^= random_ << 5;
    return random_;
  }

  // Whether the successor of `node` at `level` is null or not below x.
  bool Beyond(const char* x, const char* node, int level) const {
    const char* n = Next(node, level).load(std::memory_order_relaxed);
    return n == nullptr || compare_(n, x) >= 0;
  }

  // From `at` (below x), the last node of `level` below x.
  const char* WalkRight(const char* at, const char* x, int level) const {
    for (;;) {
      const char* n = Next(at, level).load(std::memory_order_acquire);
      if (n == nullptr || compare_(n, x) >= 0) return at;
      at = n;
    }
  }

  template <typename Key>
  const char* FindGreaterOrEqual(const Key& key) const {
    const char* at = head_;
    const char* n = nullptr;
    for (int level = max_height_.load(std::memory_order_relaxed) - 1; level >= 0; --level) {
      for (;;) {
        n = Next(at, level).load(std::memory_order_acquire);
        if (n == nullptr || compare_(n, key) >= 0) break;
        at = n;
      }
    }
    return n;
  }

  // The last node below `node`, or head_.
  const char* FindLessThan(const char* node) const {
    const char* at = head_;
    for (int level = max_height_.load(std::memory_order_relaxed) - 1; level >= 0; --level) {
      for (;;) {
        const char* n = Next(at, level).load(std::memory_order_acquire);
        if (n == nullptr || compare_(n, node) >= 0) break;
        at = n;
      }
    }
    return at;
  }

  const char* FindLast() const {
    const char* at = head_;
    for (int level = max_height_.load(std::memory_order_relaxed) - 1; level >= 0; --level) {
      for (;;) {
        const char* n = Next(at, level).load(std::memory_order_acquire);
        if (n == nullptr) break;
        at = n;
      }
    }
    return at;
  }

  const KeyComparator& compare_;
  const char* head_ = nullptr;
  std::atomic<int> max_height_{1};
  // The writer's: the last key inserted and, at each level, the last node at or before it
  // (head_ where none is).
  const char* last_ = nullptr;
  const char* finger_[kMaxHeight] = {};
  uint32_t random_ = 0x9e3779b9u;
  // Storage of the iterators made for an arena (GetIterator).
  std::mutex slots_mu_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace

rocksdb::MemTableRep* FingerSkipListFactory::CreateMemTableRep(
    const rocksdb::MemTableRep::KeyComparator& compare, rocksdb::Allocator* allocator,
    const rocksdb::SliceTransform* /*transform*/, rocksdb::Logger* /*logger*/) {
  return new FingerSkipList(compare, allocator);
}

}  // namespace cops
