#ifndef COPS_STORAGE_STEM_PAIR_STORE_H_
#define COPS_STORAGE_STEM_PAIR_STORE_H_

// The content-stem pairs of an index created with ChunkingParams::stem_pairs
// (core/stem_pairs.h), in a column family of their own ("stem_pairs", created with the index
// when its parameters ask for pairs; absent otherwise). Two key spaces:
//   'p' + BE32 pair + BE64 document id -> empty: one key per pair a document holds, so a
//       pair's holders are one short range, and their count (its document frequency) is the
//       range's length: nothing to merge, blind writes, exact under removal;
//   'd' + BE64 document id -> the document's pairs, BE32 each: what a removal deletes.
// A lookup reads at most max_documents keys per pair (a pair held by that many is common,
// whatever more hold it), through one iterator (one snapshot) with a prefix bloom filter on
// 'p' + pair. Internal to storage/; docs/storage-format.md.
//
// Thread-safety: const methods, safe from any thread; what a write batch adds is the
// Index's writer's to keep consistent.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/match.h"
#include "rocksdb/options.h"

namespace rocksdb {
class Cache;
class ColumnFamilyHandle;
class DB;
class WriteBatch;
}  // namespace rocksdb

namespace cops {

class IndexDb;

// The family's name. on-disk: do not change.
inline constexpr char kStemPairsCf[] = "stem_pairs";

// The family's options: point ranges by pair (prefix bloom filter), keyed hashes (no
// compression helps).
rocksdb::ColumnFamilyOptions StemPairsCfOptions(size_t write_buffer_bytes,
                                                const std::shared_ptr<rocksdb::Cache>& cache);

class StemPairStore {
 public:
  explicit StemPairStore(const IndexDb& db) : db_(db) {}

  // Whether the index keeps pairs (its family is open).
  bool available() const;
  // Index::LookupStemPairs. REQUIRES: available().
  absl::Status Lookup(std::span<const uint32_t> pairs, uint32_t max_documents,
                      std::vector<std::vector<DocId>>* out) const;
  // Adds `id`'s pairs (sorted, distinct) to `b`; nothing when none or not available().
  void Add(rocksdb::WriteBatch* b, DocId id, std::span<const uint32_t> pairs) const;
  // Adds the deletion of everything kept for `id` (nothing when it holds no pairs).
  absl::Status AddRemoval(rocksdb::WriteBatch* b, DocId id) const;

 private:
  const IndexDb& db_;
};

}  // namespace cops

#endif  // COPS_STORAGE_STEM_PAIR_STORE_H_
