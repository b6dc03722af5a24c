#include "engine/copy_detector.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "core/detect.h"
#include "core/hash_key.h"
#include "core/scratch.h"
#include "core/status_macros.h"
#include "core/time_format.h"
#include "convert/charset.h"
#include "engine/pipeline.h"
#include "spdlog/spdlog.h"

namespace cops {
namespace {

// Per-thread scratch of the register and check paths; trimmed after each call
// (core/scratch.h).
struct CheckScratch {
  DocumentFingerprint fingerprint;

  void Trim() {
    ReleaseIfLarge(&fingerprint.chunks);
    ReleaseIfLarge(&fingerprint.grams);
    ReleaseIfLarge(&fingerprint.units);
  }
};

CheckScratch& ThreadScratch() {
  thread_local CheckScratch scratch;
  return scratch;
}

}  // namespace

absl::Status ValidateMetadataSizes(const DocumentRecord& r) {
  for (const auto& [name, value] : {std::pair<const char*, const std::string*>{"title", &r.title},
                                    {"author", &r.author},
                                    {"external_id", &r.external_id}}) {
    if (value->size() > kMaxMetadataFieldBytes) {
      return absl::InvalidArgumentError(std::string(name) + " has " +
                                        std::to_string(value->size()) + " bytes; at most " +
                                        std::to_string(kMaxMetadataFieldBytes) + " are kept");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateLifetime(const DocumentRecord& r, int64_t now) {
  if (r.expires_unix_micros < 0 || r.not_before_unix_micros < 0) {
    return absl::InvalidArgumentError("expiry and not-before must be times after 1970");
  }
  if (r.expires_unix_micros != 0 && r.expires_unix_micros <= now) {
    return absl::InvalidArgumentError(
        "expiry " + FormatTimeMicros(r.expires_unix_micros) +
        " is not in the future (server time " + FormatTimeMicros(now) + ")");
  }
  if (r.expires_unix_micros != 0 && r.not_before_unix_micros >= r.expires_unix_micros) {
    return absl::InvalidArgumentError(
        "not-before " + FormatTimeMicros(r.not_before_unix_micros) + " is not before the expiry " +
        FormatTimeMicros(r.expires_unix_micros) + ": no check could ever report the document");
  }
  return absl::OkStatus();
}

namespace {

absl::Status Cancelled(const CheckRequestInfo& request, const char* phase) {
  if (request.cancelled && request.cancelled()) {
    return absl::DeadlineExceededError(std::string("check cancelled or past its deadline ") +
                                       phase);
  }
  return absl::OkStatus();
}

}  // namespace

CopyDetector::CopyDetector(Index* index, std::unique_ptr<Fingerprinter> fingerprinter,
                           CopyDetectorOptions options)
    : index_(index), fingerprinter_(std::move(fingerprinter)), options_(std::move(options)) {}

CopyDetector::~CopyDetector() = default;

absl::StatusOr<std::unique_ptr<CopyDetector>> CopyDetector::Create(Index* index,
                                                                   const HashKey& key,
                                                                   CopyDetectorOptions options) {
  if (index == nullptr) return absl::InvalidArgumentError("no index");
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<Fingerprinter> fingerprinter,
                        Fingerprinter::Create(index->params(), key));
  options.convert_limits.max_input_bytes =
      std::max(options.convert_limits.max_input_bytes, options.max_document_bytes);
  return std::unique_ptr<CopyDetector>(
      new CopyDetector(index, std::move(fingerprinter), std::move(options)));
}

const ChunkingParams& CopyDetector::params() const { return fingerprinter_->params(); }

absl::StatusOr<ConvertedDocument> CopyDetector::ConvertInput(std::string_view content,
                                                             DocumentFormat format,
                                                             bool find_hidden_text) const {
  COPS_RETURN_IF_ERROR(ValidateInput(content, format, options_.max_document_bytes));
  ConvertOptions options;
  options.find_hidden_text = find_hidden_text;
  return Convert(content, format, options_.convert_limits, options);
}

absl::Status CopyDetector::PrepareRegistration(std::string_view content, DocumentFormat format,
                                               const DocumentRecord& metadata,
                                               DocumentFingerprint* fp, DocumentRecord* record,
                                               RegisterResultInfo* result) const {
  COPS_ASSIGN_OR_RETURN(ConvertedDocument converted,
                        ConvertInput(content, format, /*find_hidden_text=*/false));
  COPS_RETURN_IF_ERROR(RegisterPrint(*fingerprinter_, converted.text, fp));
  if (fp->chunks.empty()) {
    return absl::InvalidArgumentError(
        "document has too little text to register: its " + std::to_string(fp->total_units) +
        " units yield no chunk under " + params().Describe());
  }
  MapToOriginal(converted, content.size(), fp);

  *record = metadata;
  record->id = 0;
  record->format = std::string(DocumentFormatName(converted.format));
  // A registration from the log keeps the time the primary recorded, on every node.
  record->registered_unix_micros =
      metadata.registered_unix_micros != 0 ? metadata.registered_unix_micros : NowMicros();
  record->sha256 = fp->sha256;
  record->total_chunks = fp->total_chunks;
  record->stored_chunks = static_cast<uint32_t>(fp->chunks.size());
  record->size_bytes = content.size();

  result->total_chunks = record->total_chunks;
  result->stored_chunks = record->stored_chunks;
  result->format = converted.format;
  result->charset = std::move(converted.charset);
  result->params = params();
  return absl::OkStatus();
}

absl::StatusOr<DocumentRecord> CopyDetector::Prepare(std::string_view content,
                                                     DocumentFormat format,
                                                     const DocumentRecord& metadata,
                                                     RegisterResultInfo* info) const {
  DocumentFingerprint fp;
  DocumentRecord record;
  RegisterResultInfo result;
  COPS_RETURN_IF_ERROR(PrepareRegistration(content, format, metadata, &fp, &record, &result));
  if (info != nullptr) *info = std::move(result);
  return record;
}

absl::StatusOr<RegisterResultInfo> CopyDetector::Register(std::string_view content,
                                                          DocumentFormat format,
                                                          const DocumentRecord& metadata,
                                                          uint64_t log_sequence) {
  DocumentFingerprint& fp = ThreadScratch().fingerprint;
  absl::Cleanup trim = [] { ThreadScratch().Trim(); };
  DocumentRecord record;
  RegisterResultInfo result;
  COPS_RETURN_IF_ERROR(PrepareRegistration(content, format, metadata, &fp, &record, &result));
  COPS_ASSIGN_OR_RETURN(result.outcome, index_->Register(record, fp, content, log_sequence));
  COPS_RETURN_IF_ERROR(DescribeRegistered(content, record, &result));
  return result;
}

absl::Status CopyDetector::DescribeRegistered(std::string_view content,
                                              const DocumentRecord& prepared,
                                              RegisterResultInfo* result) const {
  const DocId id = result->outcome.id;
  if (result->outcome.created) {
    result->record = prepared;
    result->record.id = id;
    result->content_sha256 = Sha256(content);
    return absl::OkStatus();
  }
  // An existing document: what the index holds, not what was sent (a retry by external id
  // may have sent other bytes; a duplicate has the same text, maybe other bytes).
  COPS_ASSIGN_OR_RETURN(result->record, index_->GetDocument(id));
  absl::StatusOr<std::string> stored = index_->GetText(id);
  if (stored.ok()) {
    result->content_sha256 = Sha256(*stored);
  } else if (stored.status().code() != absl::StatusCode::kNotFound) {
    return stored.status();
  }
  return absl::OkStatus();
}

absl::Status CopyDetector::RegisterBatch(std::span<const RegisterInput> inputs,
                                         std::vector<absl::StatusOr<RegisterResultInfo>>* out) {
  out->clear();
  out->reserve(inputs.size());
  std::vector<DocumentFingerprint> fps(inputs.size());
  std::vector<DocumentRecord> records(inputs.size());
  std::vector<RegisterResultInfo> results(inputs.size());
  std::vector<RegisterItem> items;
  std::vector<size_t> item_of;  // input index of items[j]
  items.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const RegisterInput& in = inputs[i];
    absl::Status s = in.metadata == nullptr
                         ? absl::InvalidArgumentError("no metadata")
                         : PrepareRegistration(in.content, in.format, *in.metadata, &fps[i],
                                               &records[i], &results[i]);
    if (!s.ok()) {
      out->push_back(std::move(s));
      continue;
    }
    out->push_back(absl::UnknownError("not written"));  // replaced below
    items.push_back(RegisterItem{&records[i], &fps[i], in.content});
    item_of.push_back(i);
  }
  std::vector<absl::StatusOr<RegisterOutcome>> outcomes;
  absl::Status written = index_->RegisterBatch(items, &outcomes);
  for (size_t j = 0; j < item_of.size(); ++j) {
    const size_t i = item_of[j];
    if (j >= outcomes.size()) {
      (*out)[i] = written.ok() ? absl::InternalError("no outcome") : written;
    } else if (!outcomes[j].ok()) {
      (*out)[i] = outcomes[j].status();
    } else {
      results[i].outcome = *outcomes[j];
      absl::Status described = DescribeRegistered(inputs[i].content, records[i], &results[i]);
      if (described.ok()) {
        (*out)[i] = std::move(results[i]);
      } else {
        (*out)[i] = described;
      }
    }
  }
  return written;
}

namespace {

// Whether the index can fingerprint a document's stored text again to what was registered
// (MakeChunkRecomputer): plain text that the text converter passes through unchanged.
bool ReproducibleText(const DocumentRecord& record, std::string_view text) {
  return record.format == DocumentFormatName(DocumentFormat::kText) &&
         text.find('\0') == std::string_view::npos && !text.starts_with("\xEF\xBB\xBF") &&
         IsValidUtf8(text);
}

// Runs a registration's steps again over the stored `text` of `record`: the whole
// fingerprint, or with `units` only its units' byte spans (and digest). DATA_LOSS naming the
// document, saying `consequence`, when the text no longer converts or yields what was
// registered (its canonical digest; the chunk counts too when they are computed).
absl::Status ReprintStoredText(const Fingerprinter& fingerprinter, const DocumentRecord& record,
                               std::string_view text, bool units, std::string_view consequence,
                               DocumentFingerprint* fp) {
  const std::string what = "document " + std::to_string(record.id);
  ConvertLimits limits;  // the text was accepted once: no size limit now
  limits.max_input_bytes = limits.max_output_bytes = std::max<uint64_t>(text.size(), 1);
  absl::StatusOr<ConvertedDocument> converted =
      ConvertInProcess(text, DocumentFormat::kText, limits);
  if (!converted.ok()) {
    return absl::DataLossError(what + ": its stored text no longer converts (" +
                               std::string(converted.status().message()) + "); " +
                               std::string(consequence));
  }
  FingerprintOptions options = RegisterFingerprintOptions(fingerprinter.params());
  options.units_only = units;
  COPS_RETURN_IF_ERROR(fingerprinter.Fingerprint(converted->text, fp, options));
  if (units && fp->sha256 != record.sha256) {
    return absl::DataLossError(what + ": its stored text is not the canonical text registered; " +
                               std::string(consequence));
  }
  if (!units && (fp->sha256 != record.sha256 || fp->total_chunks != record.total_chunks ||
                 fp->chunks.size() != record.stored_chunks)) {
    return absl::DataLossError(
        what + ": its stored text yields " + std::to_string(fp->chunks.size()) + " of " +
        std::to_string(fp->total_chunks) + " chunks (registered: " +
        std::to_string(record.stored_chunks) + " of " + std::to_string(record.total_chunks) +
        (fp->sha256 != record.sha256 ? ", and another canonical text" : "") + "); " +
        std::string(consequence));
  }
  if (units) MapToOriginal(*converted, text.size(), fp);
  return absl::OkStatus();
}

class StoredTextChunks final : public ChunkRecomputer {
 public:
  explicit StoredTextChunks(std::unique_ptr<Fingerprinter> fingerprinter)
      : fingerprinter_(std::move(fingerprinter)) {}

  bool Reproducible(const DocumentRecord& record, std::string_view text) const override {
    return ReproducibleText(record, text);
  }

  absl::Status Recompute(const DocumentRecord& record, std::string_view text,
                         std::vector<ChunkHash>* hashes) const override {
    DocumentFingerprint fp;  // not the thread's scratch: a removal may run inside a write
    COPS_RETURN_IF_ERROR(ReprintStoredText(*fingerprinter_, record, text, /*units=*/false,
                                           "its postings cannot be found", &fp));
    hashes->clear();
    hashes->reserve(fp.chunks.size());
    for (const Chunk& c : fp.chunks) hashes->push_back(c.hash);
    return absl::OkStatus();
  }

 private:
  const std::unique_ptr<Fingerprinter> fingerprinter_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const ChunkRecomputer>> MakeChunkRecomputer(
    const ChunkingParams& params, const HashKey& key) {
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<Fingerprinter> fingerprinter,
                        Fingerprinter::Create(params, key));
  return std::shared_ptr<const ChunkRecomputer>(
      std::make_shared<StoredTextChunks>(std::move(fingerprinter)));
}

absl::Status CopyDetector::RegisterAs(std::string_view content, const DocumentRecord& record) {
  COPS_ASSIGN_OR_RETURN(DocumentFormat format, ParseDocumentFormat(record.format));
  // The record keeps its own fields; Index::RegisterAs takes digest and counts from `fp`.
  DocumentFingerprint& fp = ThreadScratch().fingerprint;
  absl::Cleanup trim = [] { ThreadScratch().Trim(); };
  DocumentRecord prepared;
  RegisterResultInfo info;
  if (absl::Status s = PrepareRegistration(content, format, record, &fp, &prepared, &info);
      !s.ok()) {
    return absl::Status(s.code(), "document " + std::to_string(record.id) + ": " +
                                      std::string(s.message()));
  }
  return index_->RegisterAs(record, fp, content);
}

namespace {

// The RocksDB index as the pipeline's candidate source. Records read for candidates are
// kept for the reply; documents outside the requested collections, expired or still under
// embargo at `now` are not present.
class IndexCandidates final : public CandidateSource {
 public:
  IndexCandidates(const Index& index, const std::optional<std::vector<std::string>>& collections,
                  const std::vector<std::string>& templates, int64_t now)
      : index_(index), now_(now), templates_(templates.begin(), templates.end()) {
    if (collections.has_value()) {
      filter_ = true;
      for (const std::string& c : *collections) allowed_.insert(c);
    }
  }
  absl::Status Lookup(std::span<const ChunkHash> hashes,
                      std::vector<PostingList>* out) const override {
    return index_.Lookup(hashes, out);
  }
  absl::Status ReadCandidates(std::span<const DocId> ids,
                              std::vector<CandidateRecord>* out) const override {
    COPS_RETURN_IF_ERROR(index_.GetDocuments(ids, &records_));
    out->assign(ids.size(), CandidateRecord{});
    for (size_t i = 0; i < ids.size(); ++i) {
      std::optional<DocumentRecord>& r = records_[i];
      if (!r.has_value() || (filter_ && !allowed_.contains(r->collection)) ||
          !r->MatchableAt(now_)) {
        continue;
      }
      (*out)[i] = CandidateRecord{true, r->stored_chunks, templates_.contains(r->collection),
                                  TextDigest(r->sha256)};
      kept_.insert_or_assign(ids[i], std::move(*r));
    }
    return absl::OkStatus();
  }
  absl::Status ReadGrams(std::span<const DocId> ids,
                         std::vector<std::vector<uint32_t>>* out) const override {
    return index_.GetGrams(ids, out);
  }
  // Counted over every registered document, whatever the caller may see: how rare a pair is
  // does not depend on who asks (those it may not see are dropped by ReadCandidates).
  absl::StatusOr<bool> LookupStemPairs(std::span<const uint32_t> pairs, uint32_t max_documents,
                                       std::vector<std::vector<DocId>>* out) const override {
    return index_.LookupStemPairs(pairs, max_documents, out);
  }
  absl::Status ReadStemPairOrder(std::span<const DocId> ids,
                                 std::vector<std::vector<uint32_t>>* out) const override {
    return index_.GetStemPairOrder(ids, out);
  }
  // The record of a reported document (every one was read by ReadCandidates).
  const DocumentRecord* Record(DocId id) const {
    auto it = kept_.find(id);
    return it == kept_.end() ? nullptr : &it->second;
  }

 private:
  const Index& index_;
  const int64_t now_;
  bool filter_ = false;
  std::unordered_set<std::string> allowed_;
  const std::unordered_set<std::string> templates_;
  mutable std::vector<std::optional<DocumentRecord>> records_;
  mutable std::unordered_map<DocId, DocumentRecord> kept_;
};

}  // namespace

absl::StatusOr<CheckResult> CopyDetector::Check(const CheckRequestInfo& request) const {
  COPS_RETURN_IF_ERROR(request.options.Validate());
  COPS_ASSIGN_OR_RETURN(ConvertedDocument converted,
                        ConvertInput(request.content, request.format, options_.pdf_hidden_text));
  COPS_RETURN_IF_ERROR(Cancelled(request, "after conversion"));

  DocumentFingerprint& fp = ThreadScratch().fingerprint;
  absl::Cleanup trim = [] { ThreadScratch().Trim(); };
  COPS_RETURN_IF_ERROR(CheckPrint(*fingerprinter_, converted.text, request.sample_size,
                                  request.sample_seed, request.options, &fp));
  DetectOptions options;
  options.excluded = FindExclusions(converted.text, request.exclusions);
  MapToOriginal(converted, request.content.size(), &fp, &options.excluded);
  AddMarkupQuotes(request.content, converted.format, request.exclusions.quotes,
                  &options.excluded);

  IndexCandidates source(*index_, request.collections, request.template_collections,
                         NowMicros());
  options.check = request.options;
  COPS_ASSIGN_OR_RETURN(Report report, Detect(fp, params(), source, options));
  COPS_RETURN_IF_ERROR(Cancelled(request, "after the index lookup"));

  CheckResult result;
  result.manipulations = FindTextManipulation(converted, request.content.size());
  result.report = std::move(report);
  result.format = converted.format;
  result.charset = std::move(converted.charset);
  for (const DocumentMatch& m : result.report.matches) {
    const DocumentRecord* record = source.Record(m.doc_id);
    result.records.push_back(record != nullptr ? *record : DocumentRecord{});
  }
  PlaceRegisteredSpans(&result);
  if (SpansIndexExtractedText(converted.format)) {
    // A PDF maps text to itself and tags it with pages; the others have no map at all.
    for (DocumentMatch& m : result.report.matches) {
      for (Span& s : m.spans) {
        s.test_first_page = converted.PageOf(s.test_start);
        s.test_last_page = converted.PageOf(s.test_end > s.test_start ? s.test_end - 1 : s.test_start);
      }
    }
    result.extracted_text = std::move(converted.text);
  }
  return result;
}

void CopyDetector::PlaceRegisteredSpans(CheckResult* result) const {
  for (size_t i = 0; i < result->report.matches.size(); ++i) {
    DocumentMatch& m = result->report.matches[i];
    const auto unplaced = [](const Span& s) {
      return !s.has_registered && s.registered_unit_begin < s.registered_unit_end;
    };
    if (std::none_of(m.spans.begin(), m.spans.end(), unplaced)) continue;
    const DocumentRecord& record = result->records[i];
    if (record.format != DocumentFormatName(DocumentFormat::kText)) continue;
    absl::StatusOr<std::string> text = index_->GetText(m.doc_id);
    // Not stored, or not a text the index fingerprints again: its postings kept their
    // positions, and these passages held no chunk the lookup found.
    if (!text.ok() || !ReproducibleText(record, *text)) continue;
    DocumentFingerprint fp;
    absl::Status reprinted =
        ReprintStoredText(*fingerprinter_, record, *text, /*units=*/true,
                          "its passages are reported without registered bytes", &fp);
    if (!reprinted.ok()) {
      spdlog::warn("check: {}", std::string(reprinted.message()));
      continue;
    }
    for (Span& s : m.spans) {
      if (!unplaced(s) || s.registered_unit_end > fp.units.size()) continue;
      s.has_registered = true;
      s.registered_start = fp.units[s.registered_unit_begin].start;
      s.registered_end = fp.units[s.registered_unit_end - 1].end;
    }
  }
}

absl::Status CopyDetector::Unregister(DocId id, uint64_t log_sequence) {
  return index_->Unregister(id, log_sequence);
}

absl::StatusOr<DocumentRecord> CopyDetector::Get(DocId id) const {
  return index_->GetDocument(id);
}

absl::StatusOr<std::string> CopyDetector::GetContent(DocId id) const {
  return index_->GetText(id);
}

absl::StatusOr<DocumentPage> CopyDetector::List(std::string_view page_token, size_t page_size,
                                                std::string_view collection) const {
  return index_->ListDocuments(page_token, page_size, collection);
}

IndexStats CopyDetector::Stats() const { return index_->Stats(); }

}  // namespace cops
