#ifndef COPS_STORAGE_DUPLICATE_MAPS_H_
#define COPS_STORAGE_DUPLICATE_MAPS_H_

// The two maps that find an earlier registration of a document, both keyed within its
// collection: external ids ("external_ids": length-prefixed collection + external id ->
// BE64 document id) and canonical texts ("sha256", the duplicate map: length-prefixed
// collection + SHA-256 -> BE64 document id). The duplicate map also tells which collections
// hold documents. Internal to storage/; docs/storage-format.md.
//
// Thread-safety: const methods, safe from any thread; what a write batch adds is the
// Index's writer's to keep consistent.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/match.h"
#include "storage/document_record.h"
#include "storage/index_db.h"

namespace rocksdb {
class WriteBatch;
}

namespace cops {

class DocumentStore;
class IndexMeta;

class DuplicateMaps {
 public:
  explicit DuplicateMaps(const IndexDb& db) : db_(db) {}

  static std::string ExternalIdKey(std::string_view collection, std::string_view external_id);
  // Schema 2: the collection, then the canonical text's SHA-256; at least 33 bytes, so never
  // equal to a schema-1 key (the 32-byte digest alone).
  static std::string DuplicateKey(std::string_view collection,
                                  const std::array<uint8_t, 32>& sha256);

  // The document an entry names; std::nullopt when there is none. DATA_LOSS on a malformed
  // entry.
  absl::StatusOr<std::optional<DocId>> FindExternalId(std::string_view ext_key) const;
  absl::StatusOr<std::optional<DocId>> FindDuplicate(std::string_view sha_key) const;

  // Points the entries at `doc_key` (an empty ext_key: no external id).
  void Add(rocksdb::WriteBatch* b, std::string_view ext_key, std::string_view sha_key,
           std::string_view doc_key) const;
  // Deletes the entries of `record` that still point at it (another document may have taken
  // them over since).
  absl::Status AddRemoval(rocksdb::WriteBatch* b, const DocumentRecord& record) const;

  // The collections that hold at least one document, sorted; one seek per collection.
  absl::StatusOr<std::vector<std::string>> Collections() const;
  // Whether `collection` holds at least one document; one seek.
  absl::StatusOr<bool> HasCollection(std::string_view collection) const;

  // Schema 1 -> 2: rebuilds the duplicate map keyed by collection from the document records,
  // in batches; the last one records kSchemaVersionBase, so a crash before leaves schema 1
  // and the next open redoes it (every step is idempotent).
  absl::Status UpgradeFromSchema1(const DocumentStore& documents, const IndexMeta& meta) const;

 private:
  const IndexDb& db_;
};

}  // namespace cops

#endif  // COPS_STORAGE_DUPLICATE_MAPS_H_
