// The Index's writes: registrations (Register, RegisterBatch, RegisterAs), unregistrations,
// expiry, and the log sequence and id counter that go with them. Every write is one
// WriteBatch under IndexRep::write_mu.

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/index.h"
#include "storage/index_rep.h"
#include "storage/rocks_status.h"

namespace cops {

namespace codec = storage_codec;

// A document made ready for writing outside the writer lock: its postings grouped by hash.
struct PreparedDocument {
  const DocumentRecord* record = nullptr;
  const DocumentFingerprint* fp = nullptr;
  std::string_view text;
  DocId fixed_id = 0;   // RegisterAs; 0 assigns the next id
  std::string ext_key;  // empty: no external id
  std::string sha_key;
  std::vector<ChunkHash> hashes;  // sorted; hashes[i] is the hash of postings[i]
  std::vector<Posting> postings;  // sorted by (hash, ordinal); doc_id set when written
  absl::StatusOr<RegisterOutcome> outcome = absl::UnknownError("not written");
  bool ready = false;  // input valid; WriteRegistrations decides the outcome
  // Its hashes can be recomputed from its text (ChunkRecomputer::Reproducible): when the
  // text is stored, no chunk list is. Decided before the writer lock is taken.
  bool reproducible = false;

  PreparedDocument(const DocumentRecord& r, const DocumentFingerprint& f, std::string_view t,
                   DocId id)
      : record(&r), fp(&f), text(t), fixed_id(id) {
    for (const Chunk& c : f.chunks) {
      if (c.end < c.start) {
        outcome =
            absl::InvalidArgumentError("chunk " + std::to_string(c.ordinal) + ": end before start");
        return;
      }
    }
    // One merge operand per distinct hash: group the postings by hash.
    std::vector<std::pair<ChunkHash, Posting>> by_hash;
    by_hash.reserve(f.chunks.size());
    for (const Chunk& c : f.chunks)
      by_hash.push_back({c.hash, Posting{0, c.ordinal, c.start, c.end}});
    std::sort(by_hash.begin(), by_hash.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second.ordinal < b.second.ordinal;
    });
    postings.reserve(by_hash.size());
    hashes.reserve(by_hash.size());
    for (const auto& [h, p] : by_hash) {
      hashes.push_back(h);
      postings.push_back(p);
    }
    if (!r.external_id.empty()) ext_key = DuplicateMaps::ExternalIdKey(r.collection, r.external_id);
    sha_key = DuplicateMaps::DuplicateKey(r.collection, f.sha256);
    ready = true;
  }
};

namespace {

// Leaves `p` one posting per distinct hash, without ordinal or span (schema 6).
void DropPositions(PreparedDocument* p) {
  size_t kept = 0;
  for (size_t i = 0; i < p->hashes.size(); ++i) {
    if (kept > 0 && p->hashes[kept - 1] == p->hashes[i]) continue;
    p->hashes[kept] = p->hashes[i];
    p->postings[kept] = Posting{p->postings[i].doc_id, 0, 0, 0};
    ++kept;
  }
  p->hashes.resize(kept);
  p->postings.resize(kept);
}

// Asks the index's ChunkRecomputer whether `p` needs no chunk list, outside the writer lock.
void DecideChunkList(const IndexRep& rep, PreparedDocument* p) {
  const IndexOptions& o = rep.db->options();
  p->reproducible = p->ready && o.chunk_recomputer != nullptr && o.store_texts &&
                    !p->text.empty() && o.chunk_recomputer->Reproducible(*p->record, p->text);
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool HasLifetime(const DocumentRecord& r) {
  return r.expires_unix_micros != 0 || r.not_before_unix_micros != 0;
}

absl::Status CheckLogSequence(uint64_t log_sequence, uint64_t applied) {
  if (log_sequence != 0 && log_sequence <= applied) {
    return absl::AbortedError("log event " + std::to_string(log_sequence) +
                              " is already applied (applied up to " + std::to_string(applied) +
                              ")");
  }
  return absl::OkStatus();
}

// The writer's state a group starts from, and what it leaves for the next one.
struct WriterState {
  DocId next_id = 1;
  IndexCounters counters;
  uint64_t schema_version = 0;
};

// One group of registrations, written as one batch: Decide() settles each document's
// outcome in order and adds the created documents' records; AddPostings() their postings
// and stem pairs; AddMeta() the id counter, counters, log sequence and schema that go with
// them. Runs under the writer lock (the caller holds it); reads the index, writes only
// `batch`.
class GroupWrite {
 public:
  // `batch`: emptied here, its buffer grown to `reserve_bytes` when smaller.
  GroupWrite(const IndexRep& rep, const WriterState& state, rocksdb::WriteBatch* batch,
             size_t reserve_bytes)
      : rep_(rep),
        next_(state),
        batch_(*batch),
        // Only an index that has used lifetimes holds expiries, so others read no record
        // to learn whether a document named by a map has expired.
        may_hold_expiries_(state.schema_version >= codec::kSchemaVersionLifetimes) {
    if (batch->Data().capacity() < reserve_bytes) {
      *batch = rocksdb::WriteBatch(reserve_bytes);
    } else {
      batch->Clear();
    }
  }

  absl::Status Decide(std::span<PreparedDocument*> group) {
    created_.reserve(group.size());
    for (PreparedDocument* p : group) {
      const int64_t registered =
          p->record->registered_unix_micros != 0 ? p->record->registered_unix_micros : now_;
      COPS_ASSIGN_OR_RETURN(std::optional<RegisterOutcome> earlier, FindEarlier(*p, registered));
      if (earlier.has_value()) {
        p->outcome = *earlier;
        continue;
      }
      if (p->fixed_id != 0) {
        COPS_ASSIGN_OR_RETURN(const bool taken, IdTaken(p->fixed_id));
        if (taken) {
          p->outcome = absl::AlreadyExistsError("document " + std::to_string(p->fixed_id) +
                                                " is already registered");
          continue;
        }
      }
      Create(p, registered);
    }
    return absl::OkStatus();
  }

  void AddPostings() {
    std::vector<PostingsStore::DocumentPostings> documents;
    documents.reserve(created_.size());
    for (const PreparedDocument* p : created_) {
      documents.push_back({p->outcome->id, p->hashes, p->postings});
    }
    rep_.postings.Add(&batch_, documents);
    if (!rep_.stem_pairs.available()) return;
    std::vector<StemPairStore::DocumentPairs> pairs;
    pairs.reserve(created_.size());
    for (const PreparedDocument* p : created_) {
      pairs.push_back({p->outcome->id, p->fp->stem_pair_order});
    }
    rep_.stem_pairs.Add(&batch_, pairs);
  }

  // False when the batch would change nothing (no document created, no log event).
  bool AddMeta(uint64_t log_sequence) {
    if (log_sequence != 0) rep_.meta.PutAppliedLogSequence(&batch_, log_sequence);
    if (created_.empty() && log_sequence == 0) return false;
    rep_.meta.PutNextDocId(&batch_, next_.next_id);
    rep_.meta.PutCounters(&batch_, next_.counters);
    // The schema a build needs to read what this batch writes, recorded with it.
    uint64_t schema = next_.schema_version;
    if (lifetimes_) schema = std::max<uint64_t>(schema, codec::kSchemaVersionLifetimes);
    if (without_chunk_list_) {
      schema = std::max<uint64_t>(schema, codec::kSchemaVersionRecomputedChunks);
    }
    if (without_positions_) {
      schema = std::max<uint64_t>(schema, codec::kSchemaVersionPositionlessPostings);
    }
    if (schema != next_.schema_version) {
      rep_.meta.PutSchemaVersion(&batch_, schema);
      next_.schema_version = schema;
    }
    return true;
  }

  rocksdb::WriteBatch* batch() { return &batch_; }
  const std::vector<PreparedDocument*>& created() const { return created_; }
  const WriterState& next() const { return next_; }

 private:
  // The document `p` resolves to without being created: the earlier registration of its
  // external id, or of its text in its collection (in the index or earlier in the group).
  absl::StatusOr<std::optional<RegisterOutcome>> FindEarlier(const PreparedDocument& p,
                                                             int64_t registered) const {
    if (!p.ext_key.empty()) {
      if (auto it = new_ext_.find(p.ext_key); it != new_ext_.end()) {
        return RegisterOutcome{it->second, false, std::nullopt};
      }
      COPS_ASSIGN_OR_RETURN(std::optional<DocId> id, rep_.maps.FindExternalId(p.ext_key));
      if (id.has_value()) {
        COPS_ASSIGN_OR_RETURN(const bool expired, ExpiredBy(*id, registered));
        if (!expired) return RegisterOutcome{*id, false, std::nullopt};
      }
    }
    if (auto it = new_sha_.find(p.sha_key); it != new_sha_.end()) {
      return RegisterOutcome{it->second, false, it->second};
    }
    COPS_ASSIGN_OR_RETURN(std::optional<DocId> dup, rep_.maps.FindDuplicate(p.sha_key));
    if (dup.has_value()) {
      COPS_ASSIGN_OR_RETURN(const bool expired, ExpiredBy(*dup, registered));
      if (!expired) return RegisterOutcome{*dup, false, *dup};
    }
    return std::optional<RegisterOutcome>();
  }

  // Whether document `id`, named by the external-id or duplicate map, had expired by
  // `when`: it is then neither the earlier registration nor a duplicate of a new document,
  // which takes over the map entry (docs/storage-format.md).
  absl::StatusOr<bool> ExpiredBy(DocId id, int64_t when) const {
    if (!may_hold_expiries_) return false;
    COPS_ASSIGN_OR_RETURN(std::optional<DocumentRecord> existing,
                          rep_.documents.Find(id, "reading document"));
    return existing.has_value() && existing->expires_unix_micros != 0 &&
           existing->expires_unix_micros <= when;
  }

  // Whether RegisterAs's id is registered, in the index or earlier in the group.
  absl::StatusOr<bool> IdTaken(DocId id) const {
    COPS_ASSIGN_OR_RETURN(std::optional<DocumentRecord> taken,
                          rep_.documents.Find(id, "reading document " + std::to_string(id)));
    return taken.has_value() ||
           std::any_of(created_.begin(), created_.end(),
                       [&](const PreparedDocument* c) { return c->outcome->id == id; });
  }

  // Assigns `p` its id and adds its record, maps, text, grams and expiry to the batch.
  void Create(PreparedDocument* p, int64_t registered) {
    const DocId id = p->fixed_id != 0 ? p->fixed_id : next_.next_id;
    next_.next_id = std::max(next_.next_id, id + 1);
    DocumentRecord stored = *p->record;
    stored.id = id;
    stored.sha256 = p->fp->sha256;
    stored.total_chunks = p->fp->total_chunks;
    stored.stored_chunks = static_cast<uint32_t>(p->fp->chunks.size());
    if (stored.size_bytes == 0) stored.size_bytes = p->fp->input_bytes;
    stored.registered_unix_micros = registered;
    for (Posting& posting : p->postings) posting.doc_id = id;
    const bool keep_text = rep_.db->options().store_texts && !p->text.empty();
    const bool chunk_list = !(keep_text && p->reproducible);
    rep_.documents.Add(&batch_, stored, p->hashes, chunk_list,
                       keep_text ? p->text : std::string_view(), p->fp->grams);
    without_chunk_list_ |= !chunk_list;
    // A verifying index decides on verification grams, not on where a chunk lies in the
    // registered text, and places a reported passage in the units of a text it can
    // fingerprint again (CopyDetector), so such a document's postings need no position:
    // one per hash, the document alone (2-6 bytes of the ~11-15 a bucketed posting takes,
    // docs/storage-format.md). Only in the bucketed layout, chosen for its bytes: per hash
    // they are a few of ~23 bytes, not worth a text read per reported document.
    if (!chunk_list && rep_.db->options().params.verify_k > 0 &&
        rep_.db->bucket_layout().has_value()) {
      DropPositions(p);
      without_positions_ = true;
    }
    rep_.maps.Add(&batch_, p->ext_key, p->sha_key, codec::DocKey(id));
    if (stored.expires_unix_micros != 0) {
      rep_.expiries.Add(&batch_, stored.expires_unix_micros, id);
    }
    lifetimes_ |= HasLifetime(stored);
    next_.counters.documents += 1;
    next_.counters.postings += p->fp->chunks.size();
    if (keep_text) next_.counters.text_bytes += p->text.size();
    p->outcome = RegisterOutcome{id, true, std::nullopt};
    created_.push_back(p);
    if (!p->ext_key.empty()) new_ext_.emplace(p->ext_key, id);
    new_sha_.emplace(p->sha_key, id);
  }

  const IndexRep& rep_;
  WriterState next_;
  rocksdb::WriteBatch& batch_;
  const bool may_hold_expiries_;
  const int64_t now_ = NowMicros();
  std::vector<PreparedDocument*> created_;
  // External ids and texts created earlier in this group, for the ones repeated in it.
  std::unordered_map<std::string_view, DocId> new_ext_, new_sha_;
  bool lifetimes_ = false;  // a created document has an expiry or an embargo
  bool without_chunk_list_ = false;  // a created document keeps no chunk list
  bool without_positions_ = false;   // a created document's postings carry no positions
};

// Bytes the batch of `group` will hold (texts, postings, grams, stem pairs), over-estimated:
// reserved at once, a window's batch (~40 MB for 4,096 documents of 4 KB) is not copied
// each time its buffer doubles.
size_t BatchBytes(std::span<PreparedDocument* const> group) {
  constexpr size_t kPerPosting = 32;    // merge record: key, operand, headers; doc_chunks entry
  constexpr size_t kPerDocument = 512;  // record, maps, headers
  size_t bytes = 0;
  for (const PreparedDocument* p : group) {
    bytes += kPerDocument + p->text.size() + p->postings.size() * kPerPosting +
             (p->fp->grams.size() + 2 * p->fp->stem_pairs.size()) * sizeof(uint32_t);
  }
  return bytes;
}

}  // namespace

absl::Status IndexRep::WriteRegistrations(std::span<PreparedDocument*> group,
                                          uint64_t log_sequence) {
  if (group.empty()) return absl::OkStatus();
  absl::MutexLock lock(&write_mu);
  COPS_RETURN_IF_ERROR(CheckLogSequence(log_sequence, applied_log_sequence.load()));
  GroupWrite write(*this, WriterState{next_doc_id, counters, schema_version}, &write_batch,
                   BatchBytes(group));
  if (absl::Status s = write.Decide(group); !s.ok()) {
    for (PreparedDocument* p : group) p->outcome = s;
    return s;
  }
  write.AddPostings();
  if (!write.AddMeta(log_sequence)) return absl::OkStatus();
  const std::vector<PreparedDocument*>& created = write.created();
  // Ids are never reused, even when this write fails; except a log event's: its retry is
  // the same event, which must get the same id on every node (docs/scale-out.md).
  const DocId previous_next_id = next_doc_id;
  next_doc_id = write.next().next_id;
  const std::string what = created.size() == 1
                               ? "registering document " + std::to_string(created[0]->outcome->id)
                               : "registering " + std::to_string(created.size()) + " documents";
  absl::Status written = FromRocks(db->Write(write.batch()), what);
  if (!written.ok()) {
    if (log_sequence != 0) next_doc_id = previous_next_id;
    for (PreparedDocument* p : created) p->outcome = written;
    return written;
  }
  counters = write.next().counters;
  schema_version = write.next().schema_version;
  if (log_sequence != 0) applied_log_sequence.store(log_sequence);
  PublishCounters();
  return absl::OkStatus();
}

void Index::ReleaseWriteBuffers() {
  {
    absl::MutexLock lock(&rep_->write_mu);
    rep_->write_batch = rocksdb::WriteBatch();
  }
  rep_->postings.ReleaseAddBuffers();
}

absl::StatusOr<std::string> IndexRep::RecomputeChunkList(const DocumentRecord& record,
                                                         const std::string* text) const {
  const ChunkRecomputer* recomputer = db->options().chunk_recomputer.get();
  if (recomputer == nullptr || text == nullptr) {
    return absl::DataLossError("document " + std::to_string(record.id) + ": no chunk list, and " +
                               (text != nullptr
                                    ? "the index was opened without a way to recompute it"
                                    : "no stored text to recompute it from"));
  }
  std::vector<ChunkHash> hashes;
  COPS_RETURN_IF_ERROR(recomputer->Recompute(record, *text, &hashes));
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  std::string list;
  list.reserve(hashes.size() * 8);
  for (ChunkHash h : hashes) codec::PutFixed64BE(&list, h);
  return list;
}

std::optional<std::string> IndexRep::RecomputeBeforeRemoval(DocId id) const {
  if (db->options().chunk_recomputer == nullptr) return std::nullopt;
  absl::StatusOr<std::optional<DocumentRecord>> record = documents.Find(id, "reading document");
  if (!record.ok() || !record->has_value()) return std::nullopt;
  absl::StatusOr<bool> listed = documents.HasChunkList(id);
  if (!listed.ok() || *listed) return std::nullopt;
  absl::StatusOr<std::string> text = documents.GetText(id);
  if (!text.ok()) return std::nullopt;
  absl::StatusOr<std::string> list = RecomputeChunkList(**record, &*text);
  if (!list.ok()) return std::nullopt;
  return std::move(*list);
}

absl::Status IndexRep::AddRemoval(const DocumentRecord& record, rocksdb::WriteBatch* b,
                                  IndexCounters* next, const std::string* recomputed) const {
  COPS_ASSIGN_OR_RETURN(DocumentStore::Removed removed, documents.AddRemoval(b, record.id));
  if (removed.chunk_list.has_value()) {
    postings.AddRemoval(b, *removed.chunk_list, record.id);
  } else if (recomputed != nullptr) {
    postings.AddRemoval(b, *recomputed, record.id);
  } else {
    // Registered without a list: the hashes come back from its stored text.
    COPS_ASSIGN_OR_RETURN(
        std::string list,
        RecomputeChunkList(record, removed.text.has_value() ? &*removed.text : nullptr));
    postings.AddRemoval(b, list, record.id);
  }
  COPS_RETURN_IF_ERROR(stem_pairs.AddRemoval(b, record.id));
  if (record.expires_unix_micros != 0) {
    expiries.Remove(b, record.expires_unix_micros, record.id);
  }
  COPS_RETURN_IF_ERROR(maps.AddRemoval(b, record));
  next->documents -= std::min<uint64_t>(next->documents, 1);
  next->postings -= std::min<uint64_t>(next->postings, record.stored_chunks);
  next->text_bytes -= std::min<uint64_t>(next->text_bytes, removed.text_bytes);
  return absl::OkStatus();
}

absl::StatusOr<RegisterOutcome> Index::Register(const DocumentRecord& record,
                                                const DocumentFingerprint& fp,
                                                std::string_view text, uint64_t log_sequence) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_RETURN_IF_ERROR(rep_->db->CheckWritable());
  PreparedDocument p(record, fp, text, /*id=*/0);
  if (!p.ready) return p.outcome.status();
  DecideChunkList(*rep_, &p);
  PreparedDocument* group[] = {&p};
  COPS_RETURN_IF_ERROR(rep_->WriteRegistrations(group, log_sequence));
  return std::move(p.outcome);
}

absl::Status Index::RegisterBatch(std::span<const RegisterItem> items,
                                  std::vector<absl::StatusOr<RegisterOutcome>>* out) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  out->clear();
  COPS_RETURN_IF_ERROR(rep_->db->CheckWritable());
  std::vector<PreparedDocument> prepared;
  prepared.reserve(items.size());
  std::vector<PreparedDocument*> group;
  group.reserve(items.size());
  for (const RegisterItem& item : items) {
    prepared.emplace_back(*item.record, *item.fp, item.text, /*id=*/0);
    DecideChunkList(*rep_, &prepared.back());
    if (prepared.back().ready) group.push_back(&prepared.back());
  }
  absl::Status written = rep_->WriteRegistrations(group, /*log_sequence=*/0);
  out->reserve(items.size());
  for (PreparedDocument& p : prepared) out->push_back(std::move(p.outcome));
  return written;
}

absl::Status Index::RegisterAs(const DocumentRecord& record, const DocumentFingerprint& fp,
                               std::string_view text) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  if (record.id == 0) return absl::InvalidArgumentError("RegisterAs needs a document id");
  COPS_RETURN_IF_ERROR(rep_->db->CheckWritable());
  PreparedDocument p(record, fp, text, record.id);
  if (!p.ready) return p.outcome.status();
  DecideChunkList(*rep_, &p);
  PreparedDocument* group[] = {&p};
  COPS_RETURN_IF_ERROR(rep_->WriteRegistrations(group, /*log_sequence=*/0));
  COPS_ASSIGN_OR_RETURN(RegisterOutcome outcome, std::move(p.outcome));
  if (!outcome.created) {
    return absl::AlreadyExistsError("document " + std::to_string(record.id) +
                                    ": its external id or text is already registered as document " +
                                    std::to_string(outcome.id));
  }
  return absl::OkStatus();
}

absl::Status Index::RaiseNextDocId(DocId next) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  IndexRep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.db->CheckWritable());
  absl::MutexLock lock(&r.write_mu);
  if (next <= r.next_doc_id) return absl::OkStatus();
  rocksdb::WriteBatch b;
  r.meta.PutNextDocId(&b, next);
  COPS_RETURN_IF_ERROR(FromRocks(r.db->Write(&b), "raising the next document id"));
  r.next_doc_id = next;
  return absl::OkStatus();
}

absl::Status Index::SkipLogSequence(uint64_t log_sequence) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  IndexRep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.db->CheckWritable());
  if (log_sequence == 0) return absl::InvalidArgumentError("log sequence 0");
  absl::MutexLock lock(&r.write_mu);
  COPS_RETURN_IF_ERROR(CheckLogSequence(log_sequence, r.applied_log_sequence.load()));
  rocksdb::WriteBatch b;
  r.meta.PutAppliedLogSequence(&b, log_sequence);
  COPS_RETURN_IF_ERROR(
      FromRocks(r.db->Write(&b), "recording log event " + std::to_string(log_sequence)));
  r.applied_log_sequence.store(log_sequence);
  return absl::OkStatus();
}

absl::Status Index::RecordLogStreamIdentity(std::string_view identity) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  IndexRep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.db->CheckWritable());
  absl::MutexLock lock(&r.write_mu);
  rocksdb::WriteBatch b;
  b.Put(r.db->cf(index_layout::kMeta), index_layout::kLogStreamKey,
        rocksdb::Slice(identity.data(), identity.size()));
  // Synced: rare, and what every later apply is checked against.
  return FromRocks(r.db->Write(&b, /*sync=*/true), "recording the log stream's identity");
}

absl::Status Index::Unregister(DocId id, uint64_t log_sequence) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  IndexRep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.db->CheckWritable());
  const std::string what = "unregistering document " + std::to_string(id);
  // Ids are never reused and a text never changes: what is recomputed here still holds for
  // the document under the lock, if it is still there.
  const std::optional<std::string> recomputed = r.RecomputeBeforeRemoval(id);
  absl::MutexLock lock(&r.write_mu);
  COPS_RETURN_IF_ERROR(CheckLogSequence(log_sequence, r.applied_log_sequence.load()));
  rocksdb::WriteBatch b;
  if (log_sequence != 0) r.meta.PutAppliedLogSequence(&b, log_sequence);
  COPS_ASSIGN_OR_RETURN(std::optional<DocumentRecord> record, r.documents.Find(id, what));
  if (!record.has_value()) {
    if (log_sequence != 0) {
      COPS_RETURN_IF_ERROR(FromRocks(r.db->Write(&b), what));
      r.applied_log_sequence.store(log_sequence);
    }
    return absl::NotFoundError("document " + std::to_string(id) + " is not registered");
  }
  IndexCounters next = r.counters;
  COPS_RETURN_IF_ERROR(
      r.AddRemoval(*record, &b, &next, recomputed.has_value() ? &*recomputed : nullptr));
  r.meta.PutCounters(&b, next);
  const absl::Status written = FromRocks(r.db->Write(&b), what);
  r.stem_pairs.ForgetCommonPairs();  // the document's pairs may be rare now
  COPS_RETURN_IF_ERROR(written);
  r.counters = next;
  if (log_sequence != 0) r.applied_log_sequence.store(log_sequence);
  r.PublishCounters();
  return absl::OkStatus();
}

absl::StatusOr<size_t> Index::RemoveExpired(int64_t now_unix_micros, size_t max_documents) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  IndexRep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.db->CheckWritable());
  if (max_documents == 0) return absl::InvalidArgumentError("RemoveExpired needs a batch size");
  absl::MutexLock lock(&r.write_mu);
  for (;;) {
    // The expiry entries due by now, earliest first.
    std::vector<ExpiryQueue::Entry> due;
    COPS_RETURN_IF_ERROR(r.expiries.ForEachDue(now_unix_micros, [&](const ExpiryQueue::Entry& e) {
      due.push_back(e);
      return due.size() < max_documents;
    }));
    if (due.empty()) return 0;
    rocksdb::WriteBatch b;
    IndexCounters next = r.counters;
    size_t removed = 0;
    for (const ExpiryQueue::Entry& entry : due) {
      COPS_ASSIGN_OR_RETURN(std::optional<DocumentRecord> record,
                            r.documents.Find(entry.id, "reading expired document"));
      if (!record.has_value() || record->expires_unix_micros != entry.expires_unix_micros) {
        r.expiries.RemoveEntry(&b, entry);  // its document was removed by a build without expiries
        continue;
      }
      COPS_RETURN_IF_ERROR(r.AddRemoval(*record, &b, &next));
      ++removed;
    }
    r.meta.PutCounters(&b, next);
    const absl::Status written =
        FromRocks(r.db->Write(&b), "removing " + std::to_string(removed) + " expired documents");
    if (removed > 0) r.stem_pairs.ForgetCommonPairs();  // their pairs may be rare now
    COPS_RETURN_IF_ERROR(written);
    r.counters = next;
    r.PublishCounters();
    // A batch of stale entries only removes nothing: look at the next one.
    if (removed > 0 || due.size() < max_documents) return removed;
  }
}

absl::StatusOr<std::vector<DocId>> Index::ExpiredDocuments(int64_t now_unix_micros,
                                                           size_t limit) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  const IndexRep& r = *rep_;
  std::vector<DocId> due;
  if (limit == 0) return due;
  COPS_RETURN_IF_ERROR(r.expiries.ForEachDue(
      now_unix_micros, [&](const ExpiryQueue::Entry& e) -> absl::StatusOr<bool> {
        COPS_ASSIGN_OR_RETURN(std::optional<DocumentRecord> record,
                              r.documents.Find(e.id, "reading expired document"));
        // A stale entry (no such document, or another expiry): RemoveExpired drops those.
        if (record.has_value() && record->expires_unix_micros == e.expires_unix_micros) {
          due.push_back(e.id);
        }
        return due.size() < limit;
      }));
  return due;
}

}  // namespace cops
