#include "storage/index.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
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
      expiries(*db),
      stem_pairs(*db) {}

IndexRep::~IndexRep() {
  {
    absl::MutexLock wake(&idle_mu);
    closing.store(true, std::memory_order_release);
  }
  stop_warming.store(true, std::memory_order_release);
  // A running idle compaction returns ABORTED soon (nothing else uses the index now).
  if (idle_compacting.load() && db->is_open()) db->db().DisableManualCompaction();
  // The idle thread first: it may start a warm-up after its compaction.
  if (idle_thread.joinable()) idle_thread.join();
  if (warm_thread.joinable()) warm_thread.join();
  if (filter_thread.joinable()) filter_thread.join();
}

absl::StatusOr<std::unique_ptr<IndexRep>> IndexRep::Open(std::unique_ptr<IndexDb> opened) {
  std::unique_ptr<IndexRep> rep(new IndexRep(std::move(opened)));
  {
    absl::MutexLock lock(&rep->write_mu);
    COPS_RETURN_IF_ERROR(rep->LoadMeta());
    rep->postings.CreateFilter(rep->counters.postings);
  }
  rep->StartFillingFilter();
  if (rep->db->options().idle_compaction_seconds > 0 && !rep->db->options().read_only) {
    rep->StartIdleCompaction();
  }
  return rep;
}

void IndexRep::StartIdleCompaction() {
  idle_thread = std::thread([this] {
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    const absl::Duration idle = absl::Seconds(db->options().idle_compaction_seconds);
    const absl::Duration poll = std::min(idle, absl::Seconds(1));
    uint64_t seen = 0;
    absl::Time quiet_since = absl::Now();
    for (;;) {
      {
        absl::MutexLock lock(&idle_mu);
        const auto stop = [this] { return closing.load(std::memory_order_acquire); };
        if (idle_mu.AwaitWithTimeout(absl::Condition(&stop), poll)) return;
      }
      absl::ReaderMutexLock open(&db_mu);
      if (!db->is_open() || closed.load()) continue;
      const uint64_t sequence = db->db().GetLatestSequenceNumber();
      if (sequence != seen) {  // a write since the last look
        seen = sequence;
        quiet_since = absl::Now();
        continue;
      }
      if (absl::Now() - quiet_since < idle || postings.bulk_loading() || !postings.Layered() ||
          manual_compactions_aborted.load()) {
        continue;
      }
      idle_compacting.store(true);
      if (closing.load()) {  // the destructor did not see it compacting: do not start
        idle_compacting.store(false);
        return;
      }
      const absl::Status s = postings.CompactLayers("the postings' idle compaction");
      idle_compacting.store(false);
      const double fill = db->options().warm_after_compaction_fill;
      if (s.ok() && fill > 0 && !closing.load()) StartWarming(fill);  // new files, cold
      if (!s.ok() && !closing.load()) {
        // Tried again after the next idle spell: the error is the database's to report.
        quiet_since = absl::Now();
      }
      seen = db->db().GetLatestSequenceNumber();  // a flush moves it too
    }
  });
}

bool IndexRep::IdleCompactionDue() const {
  if (db->options().idle_compaction_seconds == 0 || db->options().read_only) return false;
  return idle_compacting.load() || (!postings.bulk_loading() && postings.Layered());
}

void IndexRep::StartFillingFilter() {
  filter_thread = std::thread([this] {
    // Linux applies a nice value to the one thread its id names.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    absl::Status s;
    for (;;) {
      {
        absl::ReaderMutexLock open(&db_mu);
        s = !db->is_open() ? absl::CancelledError("the database is closed")
            : stop_warming.load(std::memory_order_acquire)
                ? absl::CancelledError("stopped")
                : postings.FillFilter(
                      [this] { return stop_warming.load(std::memory_order_acquire); });
      }
      if (!absl::IsCancelled(s) || closing.load(std::memory_order_acquire)) break;
      // Recover stopped it (or closed the database after a failed reopen): once it is
      // open again, start over.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    absl::MutexLock lock(&filter_mu);
    filter_status = s;
    filter_done = true;
  });
}

absl::Status IndexRep::LoadMeta() {
  COPS_ASSIGN_OR_RETURN(IndexMetaState state, meta.LoadOrInit());
  // A read-only open of an older schema works as is: only writes read the duplicate map.
  if (state.schema < codec::kSchemaVersionBase && !db->options().read_only) {
    COPS_RETURN_IF_ERROR(maps.UpgradeFromSchema1(documents, meta));
    state.schema = codec::kSchemaVersionBase;
  }
  schema = state.schema;
  applied_log_sequence.store(state.applied_log_sequence);
  schema_version = state.schema;
  next_doc_id = state.next_doc_id;
  counters = state.counters;
  PublishCounters();
  return absl::OkStatus();
}

absl::Status IndexRep::CheckOpen() const {
  if (db->is_open()) return absl::OkStatus();
  return absl::UnavailableError("index " + db->options().path +
                                " is closed after a write error; it is reopened once the "
                                "disk has space again");
}

absl::Status IndexRep::Recover(bool writing) {
  if (!closed.load() && (!writing || !db->write_failed())) return absl::OkStatus();
  if (db->options().read_only) return absl::OkStatus();
  absl::MutexLock serial(&recover_mu);
  if (!closed.load() && !db->write_failed()) return absl::OkStatus();  // recovered meanwhile
  COPS_RETURN_IF_ERROR(db->ProbeSpace());
  stop_warming.store(true, std::memory_order_release);  // a warm-up gives way
  absl::MutexLock exclusive(&db_mu);
  absl::MutexLock writer(&write_mu);
  db->Close();
  closed.store(true);
  COPS_RETURN_IF_ERROR(db->Reopen());
  closed.store(false);
  stop_warming.store(false, std::memory_order_release);
  // The counters and the next id as the database has them; ids handed to writes that
  // failed stay unused.
  const DocId next_before = next_doc_id;
  COPS_RETURN_IF_ERROR(LoadMeta());
  next_doc_id = std::max(next_doc_id, next_before);
  COPS_RETURN_IF_ERROR(postings.ReapplyBulkLoad());
  if (manual_compactions_aborted.load()) db->db().DisableManualCompaction();
  db->ClearWriteFailed();
  return absl::OkStatus();
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
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->documents.Get(id);
}

absl::Status Index::GetDocuments(std::span<const DocId> ids,
                                 std::vector<std::optional<DocumentRecord>>* out) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->documents.GetMany(ids, out);
}

absl::Status Index::GetGrams(std::span<const DocId> ids,
                             std::vector<std::vector<uint32_t>>* out) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->documents.GetGrams(ids, out);
}

absl::StatusOr<bool> Index::LookupStemPairs(std::span<const uint32_t> pairs,
                                            uint32_t max_documents,
                                            std::vector<std::vector<DocId>>* out) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  if (!rep_->stem_pairs.available()) return false;
  COPS_RETURN_IF_ERROR(rep_->stem_pairs.Lookup(pairs, max_documents, out));
  return true;
}

absl::Status Index::GetStemPairOrder(std::span<const DocId> ids,
                                     std::vector<std::vector<uint32_t>>* out) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  if (!rep_->stem_pairs.available()) {
    out->assign(ids.size(), {});
    return absl::OkStatus();
  }
  return rep_->stem_pairs.ReadOrder(ids, out);
}

absl::StatusOr<std::string> Index::LogStreamIdentity() const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> identity,
                        rep_->db->Get(index_layout::kMeta, index_layout::kLogStreamKey,
                                      "reading the log stream's identity"));
  return identity.value_or("");
}

absl::StatusOr<std::string> Index::GetText(DocId id) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->documents.GetText(id);
}

absl::StatusOr<DocumentPage> Index::ListDocuments(std::string_view page_token, size_t page_size,
                                                  std::string_view collection) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->documents.List(page_token, page_size, collection);
}

absl::StatusOr<bool> Index::HasCollection(std::string_view collection) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_RETURN_IF_ERROR(rep_->CheckListsCollections());
  return rep_->maps.HasCollection(collection);
}

absl::StatusOr<std::vector<std::string>> Index::Collections() const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_RETURN_IF_ERROR(rep_->CheckListsCollections());
  return rep_->maps.Collections();
}

absl::Status Index::Lookup(std::span<const ChunkHash> hashes, std::vector<PostingList>* out) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->postings.Lookup(hashes, out);
}

}  // namespace cops
