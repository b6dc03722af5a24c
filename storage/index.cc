#include "storage/index.h"

#include <utility>

#include "core/status_macros.h"
#include "storage/index_rep.h"

namespace cops {

namespace codec = storage_codec;

IndexRep::IndexRep(std::unique_ptr<IndexDb> opened)
    : db(std::move(opened)),
      meta(*db),
      postings(*db, db->options().lookup_threads),
      documents(*db),
      maps(*db),
      expiries(*db) {}

IndexRep::~IndexRep() {
  stop_warming.store(true, std::memory_order_release);
  if (warm_thread.joinable()) warm_thread.join();
}

absl::StatusOr<std::unique_ptr<IndexRep>> IndexRep::Open(std::unique_ptr<IndexDb> opened) {
  std::unique_ptr<IndexRep> rep(new IndexRep(std::move(opened)));
  COPS_ASSIGN_OR_RETURN(IndexMetaState state, rep->meta.LoadOrInit());
  // A read-only open of an older schema works as is: only writes read the duplicate map.
  if (state.schema < codec::kSchemaVersionBase && !rep->db->options().read_only) {
    COPS_RETURN_IF_ERROR(rep->maps.UpgradeFromSchema1(rep->documents, rep->meta));
    state.schema = codec::kSchemaVersionBase;
  }
  rep->schema = state.schema;
  rep->applied_log_sequence.store(state.applied_log_sequence);
  absl::MutexLock lock(&rep->write_mu);
  rep->schema_version = state.schema;
  rep->next_doc_id = state.next_doc_id;
  rep->counters = state.counters;
  rep->PublishCounters();
  return rep;
}

void IndexRep::PublishCounters() {
  documents_count.store(counters.documents, std::memory_order_relaxed);
  postings_count.store(counters.postings, std::memory_order_relaxed);
  text_bytes.store(counters.text_bytes, std::memory_order_relaxed);
}

absl::Status IndexRep::CheckListsCollections() const {
  if (schema >= 2) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "index " + db->options().path + " has schema version " + std::to_string(schema) +
      ", which cannot list its collections; open it writable once to upgrade it");
}

Index::Index(std::unique_ptr<IndexRep> rep) : rep_(std::move(rep)) {}
Index::~Index() = default;

absl::StatusOr<std::unique_ptr<Index>> Index::Open(const IndexOptions& options) {
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<IndexDb> db, IndexDb::Open(options));
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<IndexRep> rep, IndexRep::Open(std::move(db)));
  return std::unique_ptr<Index>(new Index(std::move(rep)));
}

const ChunkingParams& Index::params() const { return rep_->db->options().params; }

DocId Index::NextDocId() const {
  absl::MutexLock lock(&rep_->write_mu);
  return rep_->next_doc_id;
}

uint64_t Index::AppliedLogSequence() const { return rep_->applied_log_sequence.load(); }

absl::StatusOr<DocumentRecord> Index::GetDocument(DocId id) const {
  return rep_->documents.Get(id);
}

absl::Status Index::GetDocuments(std::span<const DocId> ids,
                                 std::vector<std::optional<DocumentRecord>>* out) const {
  return rep_->documents.GetMany(ids, out);
}

absl::Status Index::GetGrams(std::span<const DocId> ids,
                             std::vector<std::vector<uint32_t>>* out) const {
  return rep_->documents.GetGrams(ids, out);
}

absl::StatusOr<std::string> Index::GetText(DocId id) const { return rep_->documents.GetText(id); }

absl::StatusOr<DocumentPage> Index::ListDocuments(std::string_view page_token, size_t page_size,
                                                  std::string_view collection) const {
  return rep_->documents.List(page_token, page_size, collection);
}

absl::StatusOr<bool> Index::HasCollection(std::string_view collection) const {
  COPS_RETURN_IF_ERROR(rep_->CheckListsCollections());
  return rep_->maps.HasCollection(collection);
}

absl::StatusOr<std::vector<std::string>> Index::Collections() const {
  COPS_RETURN_IF_ERROR(rep_->CheckListsCollections());
  return rep_->maps.Collections();
}

absl::Status Index::Lookup(std::span<const ChunkHash> hashes, std::vector<PostingList>* out) const {
  return rep_->postings.Lookup(hashes, out);
}

}  // namespace cops
