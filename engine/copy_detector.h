#ifndef COPS_ENGINE_COPY_DETECTOR_H_
#define COPS_ENGINE_COPY_DETECTOR_H_

// The COPS application: register and check documents. Knows nothing of gRPC; the service
// (server/service.h) authorizes, converts messages and calls it.
//
//   Register: convert -> fingerprint -> offsets mapped to the original bytes -> Index.
//   Check:    convert -> fingerprint -> optional sampling -> one batched Index lookup ->
//             MatchSet::Tally -> document records of the candidates -> Decide -> collection
//             and lifetime filter (expired and embargoed documents are never reported) ->
//             spans mapped to byte offsets of the input as given -> registered bytes the
//             postings lack placed from stored texts (PlaceRegisteredSpans).
//
// Thread-safety: safe for concurrent use from many threads (the Fingerprinter is immutable,
// the Index is thread-safe, scratch buffers are per thread).

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "convert/converter.h"
#include "core/exclusions.h"
#include "core/fingerprint.h"
#include "core/manipulation.h"
#include "core/match.h"
#include "engine/wall_clock.h"
#include "storage/index.h"

namespace cops {

struct CopyDetectorOptions {
  // Larger documents are refused with RESOURCE_EXHAUSTED before any work.
  uint64_t max_document_bytes = 32ull << 20;
  // Passed to Convert(); max_input_bytes is raised to at least max_document_bytes.
  ConvertLimits convert_limits;
  // A bulk registration stream (RegisterDocuments) is written in windows of this many
  // documents (or 16 MiB of content, whichever comes first): one index write per window.
  // The more postings one write sorts together, the fewer skip-list nodes each memtable
  // insert passes, so larger windows register faster (docs/performance.md, "Registration
  // decisions"). 16 MiB bounds the memory either way.
  uint32_t bulk_window_documents = 4096;
  // Documents one RegisterDocuments stream may carry. Its reply holds a result (with a
  // signed receipt, ~700 bytes) per document and must stay under gRPC's 64 MiB message
  // limit; the document past this gets RESOURCE_EXHAUSTED and the stream ends, every
  // earlier result kept.
  uint32_t max_documents_per_stream = 50000;
  // Checks look for hidden text in PDFs (ConvertOptions::find_hidden_text: rendering their
  // pages makes a PDF's conversion several times slower, docs/converters.md); HTML, DOCX,
  // LaTeX and ODT report theirs either way (ODT then without the named styles of its
  // styles.xml). Registrations never look.
  bool pdf_hidden_text = true;
  // Checks that do not say (v1.CheckOptions.heavy_revisions unset) look for heavy revisions
  // (CheckOptions::revision_share = kHeavyRevisionShare; copsd --heavy-revisions): for a
  // registry of prose whose owners want rewrites found; a registry of texts made from one
  // template may turn it off (copsd --heavy-revisions=false).
  bool heavy_revisions = true;
  // Wall clock in microseconds since the epoch (replaceable for tests): registration times,
  // and the "now" against which expiries and embargoes are checked.
  std::function<int64_t()> now_micros = WallClockMicros;
};

struct RegisterResultInfo {
  RegisterOutcome outcome;
  uint32_t total_chunks = 0;
  uint32_t stored_chunks = 0;
  DocumentFormat format = DocumentFormat::kText;  // the format actually parsed
  std::string charset;
  // The chunking parameters (and key id) of the generation that registered it, for the reply
  // and the receipt.
  ChunkingParams params;
  // The record of the document outcome.id names, as the index holds it: the new document's,
  // or, when an existing document was returned, that document's (its metadata, text digest
  // and original registration time).
  DocumentRecord record;
  // SHA-256 of that document's bytes as registered: of the input for a new document, of the
  // stored bytes for an existing one; std::nullopt when those were not stored
  // (IndexOptions::store_texts off).
  std::optional<std::array<uint8_t, 32>> content_sha256;
};

// One document of CopyDetector::RegisterBatch; the views must outlive the call.
struct RegisterInput {
  std::string_view content;
  DocumentFormat format = DocumentFormat::kAuto;
  const DocumentRecord* metadata = nullptr;
};

struct CheckRequestInfo {
  std::string_view content;
  DocumentFormat format = DocumentFormat::kAuto;
  CheckOptions options;
  uint32_t sample_size = 0;  // 0 = look up every selected chunk
  uint64_t sample_seed = 0;
  // Only documents of these collections are reported; std::nullopt = all.
  std::optional<std::vector<std::string>> collections;
  // Parts of the text that do not count (core/exclusions.h), found in the converted text;
  // for Markdown also the original's '>' lines and for HTML its <blockquote> elements, whose
  // markers the converters drop.
  TextExclusions exclusions;
  // Documents of these collections are templates (CandidateRecord::template_source).
  std::vector<std::string> template_collections;
  // Polled between phases; returning true ends the check with DEADLINE_EXCEEDED.
  std::function<bool()> cancelled;
};

struct CheckResult {
  // Matches ordered by ratio, at most options.max_results (0 = all); spans in bytes of the
  // checked input as given, or in `extracted_text` when that is set. Spans of a PDF carry
  // their pages.
  Report report;
  std::vector<DocumentRecord> records;  // records[i] is the document of report.matches[i]
  DocumentFormat format = DocumentFormat::kText;
  std::string charset;
  // Set for formats without a byte map to the input (SpansIndexExtractedText(),
  // convert/document_format.h): the text the spans index. Empty otherwise.
  std::string extracted_text;
  // Text manipulation found in the checked document (core/manipulation.h), ranges in the
  // byte space of the spans.
  std::vector<Manipulation> manipulations;
};


class CopyDetector {
 public:
  // `index` is not owned and must outlive the detector. INVALID_ARGUMENT when the key does
  // not match index->params().key_id.
  static absl::StatusOr<std::unique_ptr<CopyDetector>> Create(Index* index, const HashKey& key,
                                                              CopyDetectorOptions options);
  ~CopyDetector();

  // Registers `content` with `metadata` (its id field is ignored; a non-zero
  // registered_unix_micros is kept, else the detector's clock is read; expiry and embargo
  // are kept as given: ValidateLifetime() is the caller's, when the request comes in, so
  // that a registration replayed from the log later is applied alike). INVALID_ARGUMENT for
  // an empty document, an unknown format, unreadable content or text too short to yield a
  // chunk; RESOURCE_EXHAUSTED above max_document_bytes. The index is unchanged on error.
  // `log_sequence` != 0 applies registration-log event `log_sequence` (Index::Register).
  absl::StatusOr<RegisterResultInfo> Register(std::string_view content, DocumentFormat format,
                                              const DocumentRecord& metadata,
                                              uint64_t log_sequence = 0);

  // Registers several documents with one atomic index write (Index::RegisterBatch), the
  // bulk path: out->at(i) is what Register() would have returned for inputs[i], in order.
  // The returned status is an error only when the write itself failed; then no document of
  // the batch was stored and every valid input's result carries that error.
  absl::Status RegisterBatch(std::span<const RegisterInput> inputs,
                             std::vector<absl::StatusOr<RegisterResultInfo>>* out);

  // Everything of Register but the index write: the record it would store (format, digest
  // of the canonical text, chunk counts under this detector's key, size; id 0) and the
  // parsed format and charset in `info` when not null. Errors as for Register. A router uses
  // it to refuse a document before it reaches the log and to choose its partition.
  absl::StatusOr<DocumentRecord> Prepare(std::string_view content, DocumentFormat format,
                                         const DocumentRecord& metadata,
                                         RegisterResultInfo* info = nullptr) const;

  // Re-registers a document another index generation holds: converts `content` (its stored
  // original text) in the record's format, fingerprints it under this detector's key and
  // registers it under record.id with the record's metadata (Index::RegisterAs). Errors as
  // for Register and Index::RegisterAs.
  absl::Status RegisterAs(std::string_view content, const DocumentRecord& record);

  // Checks a document. Only documents matchable now (DocumentRecord::MatchableAt) are
  // reported. Errors as for Register (a text too short for any chunk is not an error: it
  // matches nothing); DEADLINE_EXCEEDED when `cancelled` says so.
  absl::StatusOr<CheckResult> Check(const CheckRequestInfo& request) const;

  // NOT_FOUND for an unknown id. `log_sequence`: as for Index::Unregister.
  absl::Status Unregister(DocId id, uint64_t log_sequence = 0);
  absl::StatusOr<DocumentRecord> Get(DocId id) const;
  absl::StatusOr<std::string> GetContent(DocId id) const;
  absl::StatusOr<DocumentPage> List(std::string_view page_token, size_t page_size,
                                    std::string_view collection) const;
  IndexStats Stats() const;

  const ChunkingParams& params() const;
  const CopyDetectorOptions& options() const { return options_; }
  // The detector's clock (CopyDetectorOptions::now_micros).
  int64_t NowMicros() const { return options_.now_micros(); }
  Index* index() const { return index_; }

 private:
  CopyDetector(Index* index, std::unique_ptr<Fingerprinter> fingerprinter,
               CopyDetectorOptions options);
  // `find_hidden_text`: ConvertOptions::find_hidden_text (checks report hidden text,
  // registrations do not).
  absl::StatusOr<ConvertedDocument> ConvertInput(std::string_view content, DocumentFormat format,
                                                 bool find_hidden_text) const;
  // Convert, fingerprint and map offsets: everything of a registration but the index write.
  // `record` gets the metadata, format, time, digest and chunk counts.
  absl::Status PrepareRegistration(std::string_view content, DocumentFormat format,
                                   const DocumentRecord& metadata, DocumentFingerprint* fp,
                                   DocumentRecord* record, RegisterResultInfo* result) const;
  // Fills result->record and result->content_sha256 once result->outcome is known;
  // Spans the postings left without registered bytes (a verifying index keeps none for a
  // stored plain text, docs/storage-format.md) take the bytes of their registered units
  // [registered_unit_begin, registered_unit_end) in the stored text, fingerprinted again:
  // one text read and fingerprint per reported document that needs it. A text that no longer
  // yields what was registered leaves them unplaced (logged).
  void PlaceRegisteredSpans(CheckResult* result) const;
  // `prepared` is the record PrepareRegistration made of `content`.
  absl::Status DescribeRegistered(std::string_view content, const DocumentRecord& prepared,
                                  RegisterResultInfo* result) const;

  Index* const index_;
  const std::unique_ptr<Fingerprinter> fingerprinter_;
  const CopyDetectorOptions options_;
};

// The ChunkRecomputer of an index built under `params` and `key`, for
// IndexOptions::chunk_recomputer: the registration's steps (Convert, RegisterPrint) run again
// over a stored text at removal. Reproducible: a document registered as plain text that is
// valid UTF-8 without a byte-order mark or NUL byte, which the text converter passes through
// unchanged, so that its chunks depend only on what the index records (parameters, key id,
// normalization version). Other documents keep their chunk lists: their conversion depends
// on converter code and libraries (libxml2, poppler, uchardet) that no index records.
// Recompute compares the canonical text's SHA-256 and the chunk counts with the record
// (DATA_LOSS naming the document when they differ). INVALID_ARGUMENT as
// Fingerprinter::Create.
absl::StatusOr<std::shared_ptr<const ChunkRecomputer>> MakeChunkRecomputer(
    const ChunkingParams& params, const HashKey& key);

// OK when a registration's expiry (if any) lies after `now` and its embargo (if any) ends
// before its expiry; INVALID_ARGUMENT naming the times otherwise.
absl::Status ValidateLifetime(const DocumentRecord& record, int64_t now);

// Bytes a registration's title, author or external id may hold each.
inline constexpr size_t kMaxMetadataFieldBytes = 1024;
// OK when title, author and external id are each at most kMaxMetadataFieldBytes;
// INVALID_ARGUMENT naming the field otherwise.
absl::Status ValidateMetadataSizes(const DocumentRecord& record);

}  // namespace cops

#endif  // COPS_ENGINE_COPY_DETECTOR_H_
