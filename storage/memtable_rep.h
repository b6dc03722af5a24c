#ifndef COPS_STORAGE_MEMTABLE_REP_H_
#define COPS_STORAGE_MEMTABLE_REP_H_

// The memtable of the postings column families: a skip list that starts each insert from
// where the previous one went (a finger), for writes whose keys come in ascending order.
//
// Why not RocksDB's own skip list: Debian 12's librocksdb 7.8.3 is built without NDEBUG
// (CMAKE_BUILD_TYPE=None), and after every insert InlineSkipList checks the order of the
// insert position at every level of the list with four key comparisons each (~40 per insert
// at 10^5 entries). A registration window writes one merge operand per bucket it touches, in
// key order, so those checks were 18.8% of copsd's instructions per registered document
// (callgrind, docs/performance.md); this list makes the comparisons an insert needs and no
// more.
//
// The contract is RocksDB's MemTableRep: one writer at a time (the factory does not support
// concurrent inserts, so the DB runs with allow_concurrent_memtable_write off), any number of
// readers at once without locks. Entries are never removed; their memory is the memtable's
// arena, freed with it. Keys are unique (an internal key carries its sequence number):
// InsertKey of an equal key returns false.

#include "rocksdb/memtablerep.h"

namespace cops {

class FingerSkipListFactory : public rocksdb::MemTableRepFactory {
 public:
  static const char* kClassName() { return "CopsFingerSkipListFactory"; }
  const char* Name() const override { return kClassName(); }
  rocksdb::MemTableRep* CreateMemTableRep(const rocksdb::MemTableRep::KeyComparator& compare,
                                          rocksdb::Allocator* allocator,
                                          const rocksdb::SliceTransform* transform,
                                          rocksdb::Logger* logger) override;
  bool IsInsertConcurrentlySupported() const override { return false; }
  bool CanHandleDuplicatedKey() const override { return true; }
};

}  // namespace cops

#endif  // COPS_STORAGE_MEMTABLE_REP_H_
