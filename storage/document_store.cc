#include "storage/document_store.h"

#include <algorithm>
#include <charconv>
#include <memory>

#include "core/status_macros.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

namespace codec = storage_codec;
using namespace index_layout;  // the column families and keys this file names

// One MultiGet of the values keyed by these document ids in `cf`.
void MultiGetByDocId(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* cf, std::span<const DocId> ids,
                     std::vector<rocksdb::PinnableSlice>* values,
                     std::vector<rocksdb::Status>* statuses) {
  std::vector<std::string> keys(ids.size());
  std::vector<rocksdb::Slice> slices(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    keys[i] = codec::DocKey(ids[i]);
    slices[i] = keys[i];
  }
  *values = std::vector<rocksdb::PinnableSlice>(ids.size());
  statuses->assign(ids.size(), rocksdb::Status());
  // Big-endian keys sort as the ids do: ascending ids (what the check pipeline asks for)
  // spare MultiGet its sort of the keys.
  db.MultiGet(rocksdb::ReadOptions(), cf, ids.size(), slices.data(), values->data(),
              statuses->data(), std::is_sorted(ids.begin(), ids.end()));
}

}  // namespace

absl::StatusOr<std::optional<DocumentRecord>> DocumentStore::Find(DocId id,
                                                                  std::string_view what) const {
  COPS_ASSIGN_OR_RETURN(auto value, db_.Get(kDocuments, codec::DocKey(id), what));
  if (!value.has_value()) return std::optional<DocumentRecord>();
  DocumentRecord record;
  COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(id, *value, &record));
  return std::optional<DocumentRecord>(std::move(record));
}

absl::StatusOr<DocumentRecord> DocumentStore::Get(DocId id) const {
  COPS_ASSIGN_OR_RETURN(auto record, Find(id, "reading document " + std::to_string(id)));
  if (!record.has_value()) {
    return absl::NotFoundError("document " + std::to_string(id) + " is not registered");
  }
  return std::move(*record);
}

absl::Status DocumentStore::GetMany(std::span<const DocId> ids,
                                    std::vector<std::optional<DocumentRecord>>* out) const {
  out->assign(ids.size(), std::nullopt);
  if (ids.empty()) return absl::OkStatus();
  std::vector<rocksdb::PinnableSlice> values;
  std::vector<rocksdb::Status> statuses;
  MultiGetByDocId(db_.db(), db_.cf(kDocuments), ids, &values, &statuses);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return FromRocks(statuses[i], "reading document records");
    DocumentRecord record;
    COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(ids[i], values[i].ToStringView(), &record));
    (*out)[i] = std::move(record);
  }
  return absl::OkStatus();
}

absl::Status DocumentStore::GetGrams(std::span<const DocId> ids,
                                     std::vector<std::vector<uint32_t>>* out) const {
  out->resize(ids.size());
  for (auto& g : *out) g.clear();
  if (ids.empty() || db_.verify() == nullptr) return absl::OkStatus();
  std::vector<rocksdb::PinnableSlice> values;
  std::vector<rocksdb::Status> statuses;
  MultiGetByDocId(db_.db(), db_.verify(), ids, &values, &statuses);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return FromRocks(statuses[i], "reading verification grams");
    COPS_RETURN_IF_ERROR(codec::DecodeGrams(ids[i], values[i].ToStringView(), &(*out)[i]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> DocumentStore::GetText(DocId id) const {
  COPS_ASSIGN_OR_RETURN(auto value, db_.Get(kTexts, codec::DocKey(id),
                                            "reading text of document " + std::to_string(id)));
  if (!value.has_value()) {
    return absl::NotFoundError("no text stored for document " + std::to_string(id));
  }
  return std::move(*value);
}

absl::StatusOr<bool> DocumentStore::HasChunkList(DocId id) const {
  COPS_ASSIGN_OR_RETURN(auto list, db_.Get(kDocChunks, codec::DocKey(id),
                                           "reading chunk list of document " + std::to_string(id)));
  return list.has_value();
}

absl::StatusOr<DocumentPage> DocumentStore::List(std::string_view page_token, size_t page_size,
                                                 std::string_view collection) const {
  page_size = std::clamp<size_t>(page_size, 1, 1000);
  DocId after = 0;
  if (!page_token.empty()) {
    // Token: the decimal id of the last document of the previous page.
    if (page_token.size() > 20 || !std::all_of(page_token.begin(), page_token.end(),
                                               [](char c) { return c >= '0' && c <= '9'; })) {
      return absl::InvalidArgumentError("malformed page token");
    }
    const auto [end, error] =
        std::from_chars(page_token.data(), page_token.data() + page_token.size(), after);
    if (error != std::errc() || end != page_token.data() + page_token.size()) {
      return absl::InvalidArgumentError("malformed page token (beyond any document id)");
    }
    if (after == UINT64_MAX) return DocumentPage{};
  }
  DocumentPage page;
  std::unique_ptr<rocksdb::Iterator> it(
      db_.db().NewIterator(rocksdb::ReadOptions(), db_.cf(kDocuments)));
  const std::string start = codec::DocKey(after + 1);
  DocId last = 0;
  for (it->Seek(start); it->Valid(); it->Next()) {
    if (it->key().size() != 8) return absl::DataLossError("malformed document key");
    const DocId id = codec::DecodeFixed64BE(it->key().data());
    if (page.documents.size() == page_size) {
      page.next_page_token = std::to_string(last);
      break;
    }
    DocumentRecord record;
    COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(id, it->value().ToStringView(), &record));
    last = id;
    if (!collection.empty() && record.collection != collection) continue;
    page.documents.push_back(std::move(record));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "listing documents");
  return page;
}

absl::Status DocumentStore::ForEachRecord(
    const std::function<absl::Status(const DocumentRecord&)>& visit) const {
  std::unique_ptr<rocksdb::Iterator> it(
      db_.db().NewIterator(rocksdb::ReadOptions(), db_.cf(kDocuments)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (it->key().size() != 8) return absl::DataLossError("malformed document key");
    DocumentRecord record;
    COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(codec::DecodeFixed64BE(it->key().data()),
                                                     it->value().ToStringView(), &record));
    COPS_RETURN_IF_ERROR(visit(record));
  }
  return FromRocks(it->status(), "reading the document records of " + db_.options().path);
}

void DocumentStore::Add(rocksdb::WriteBatch* b, const DocumentRecord& record,
                        std::span<const ChunkHash> sorted_hashes, bool chunk_list,
                        std::string_view text, std::span<const uint32_t> grams) const {
  const std::string doc_key = codec::DocKey(record.id);
  b->Put(db_.cf(kDocuments), doc_key, codec::EncodeDocumentRecord(record));
  if (chunk_list) {
    std::string list;  // the document's distinct hashes, for AddRemoval
    list.reserve(sorted_hashes.size() * 8);
    for (size_t i = 0; i < sorted_hashes.size(); ++i) {
      if (i == 0 || sorted_hashes[i] != sorted_hashes[i - 1]) {
        codec::PutFixed64BE(&list, sorted_hashes[i]);
      }
    }
    b->Put(db_.cf(kDocChunks), doc_key, list);
  }
  if (!text.empty()) b->Put(db_.cf(kTexts), doc_key, AsSlice(text));
  if (db_.verify() != nullptr && !grams.empty()) {
    b->Put(db_.verify(), doc_key, codec::EncodeGrams(grams));
  }
}

absl::StatusOr<DocumentStore::Removed> DocumentStore::AddRemoval(rocksdb::WriteBatch* b,
                                                                 DocId id) const {
  const std::string doc_key = codec::DocKey(id);
  const std::string what = "unregistering document " + std::to_string(id);
  COPS_ASSIGN_OR_RETURN(auto chunk_list, db_.Get(kDocChunks, doc_key, what));
  if (chunk_list.has_value() && chunk_list->size() % 8 != 0) {
    return absl::DataLossError("document " + std::to_string(id) + ": malformed chunk list");
  }
  COPS_ASSIGN_OR_RETURN(auto text, db_.Get(kTexts, doc_key, what));
  b->Delete(db_.cf(kDocuments), doc_key);
  if (chunk_list.has_value()) b->Delete(db_.cf(kDocChunks), doc_key);
  b->Delete(db_.cf(kTexts), doc_key);
  if (db_.verify() != nullptr) b->Delete(db_.verify(), doc_key);
  Removed removed;
  removed.text_bytes = text.has_value() ? text->size() : 0;
  removed.chunk_list = std::move(chunk_list);
  if (!removed.chunk_list.has_value()) removed.text = std::move(text);
  return removed;
}

}  // namespace cops
