#ifndef COPS_STORAGE_DOCUMENT_STORE_H_
#define COPS_STORAGE_DOCUMENT_STORE_H_

// What the index keeps per document, each keyed by the BE64 document id in a column family
// of its own: the record ("documents"), its distinct chunk hashes for unregistering
// ("doc_chunks"; none for a document whose hashes are recomputed from its text), its text
// ("texts", optional) and its verification grams ("verify").
// Internal to storage/; docs/storage-format.md.
//
// Thread-safety: const methods, safe from any thread; what a write batch adds is the
// Index's writer's to keep consistent.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/match.h"
#include "storage/document_record.h"
#include "storage/index.h"
#include "storage/index_db.h"

namespace rocksdb {
class WriteBatch;
}

namespace cops {

class DocumentStore {
 public:
  explicit DocumentStore(const IndexDb& db) : db_(db) {}

  // The record of `id`; std::nullopt when none. `what` names the read in an error.
  absl::StatusOr<std::optional<DocumentRecord>> Find(DocId id, std::string_view what) const;
  // NOT_FOUND when no such document.
  absl::StatusOr<DocumentRecord> Get(DocId id) const;
  // Index::GetDocuments, GetGrams, GetText, ListDocuments.
  absl::Status GetMany(std::span<const DocId> ids,
                       std::vector<std::optional<DocumentRecord>>* out) const;
  absl::Status GetGrams(std::span<const DocId> ids, std::vector<std::vector<uint32_t>>* out) const;
  absl::StatusOr<std::string> GetText(DocId id) const;
  // Whether `id` has a chunk list (a document kept without one has its hashes recomputed).
  absl::StatusOr<bool> HasChunkList(DocId id) const;
  absl::StatusOr<DocumentPage> List(std::string_view page_token, size_t page_size,
                                    std::string_view collection) const;
  // Calls `visit` with every record in id order until it fails (its error is returned).
  absl::Status ForEachRecord(const std::function<absl::Status(const DocumentRecord&)>& visit) const;

  // Adds `record` (its id set), the distinct hashes of `sorted_hashes` as its chunk list when
  // `chunk_list`, `text` (when not empty) and `grams` (when not empty and the index keeps
  // grams).
  void Add(rocksdb::WriteBatch* b, const DocumentRecord& record,
           std::span<const ChunkHash> sorted_hashes, bool chunk_list, std::string_view text,
           std::span<const uint32_t> grams) const;

  // What AddRemoval read of the document it removes.
  struct Removed {
    std::optional<std::string> chunk_list;  // BE64 distinct chunk hashes; none kept
    std::optional<std::string> text;        // read only when there is no chunk list
    uint64_t text_bytes = 0;
  };
  // Adds the deletion of everything kept for `id`. DATA_LOSS when its chunk list is
  // malformed.
  absl::StatusOr<Removed> AddRemoval(rocksdb::WriteBatch* b, DocId id) const;

 private:
  const IndexDb& db_;
};

}  // namespace cops

#endif  // COPS_STORAGE_DOCUMENT_STORE_H_
