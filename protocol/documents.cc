#include "protocol/documents.h"

#include <string>
#include <algorithm>
#include <utility>

namespace cops {

void FillDocumentInfo(const DocumentRecord& r, v1::DocumentInfo* out) {
  out->set_doc_id(r.id);
  v1::DocumentMetadata* m = out->mutable_metadata();
  m->set_title(r.title);
  m->set_author(r.author);
  m->set_owner(r.owner);
  m->set_collection(r.collection);
  m->set_external_id(r.external_id);
  m->set_expires_unix_micros(r.expires_unix_micros);
  m->set_not_before_unix_micros(r.not_before_unix_micros);
  out->set_format(r.format);
  out->set_registered_unix_micros(r.registered_unix_micros);
  out->set_sha256(Hex(r.sha256));
  out->set_chunks(r.total_chunks);
  out->set_stored_chunks(r.stored_chunks);
  out->set_size_bytes(r.size_bytes);
}
void FillAuditEntry(const AuditRecord& r, v1::AuditEntry* e) {
  e->set_doc_id(r.doc_id);
  e->set_collection(r.collection);
  e->set_unix_micros(r.unix_micros);
  e->set_checker(r.checker);
  e->set_ratio(r.ratio);
  e->set_containment(r.containment);
  e->set_matched_chunks(r.matched_chunks);
  e->set_violation(r.violation);
  e->set_test_sha256(r.test_sha256);
}

absl::StatusOr<DocumentFormat> FormatFromProto(int format) {
  if (!IsDocumentFormat(format)) {
    return absl::InvalidArgumentError("unknown document format " + std::to_string(format));
  }
  return static_cast<DocumentFormat>(format);
}

DocumentRecord MetadataFromProto(const v1::DocumentMetadata& m) {
  DocumentRecord meta;
  meta.title = m.title();
  meta.author = m.author();
  meta.owner = m.owner();
  meta.collection = m.collection();
  meta.external_id = m.external_id();
  meta.expires_unix_micros = m.expires_unix_micros();
  meta.not_before_unix_micros = m.not_before_unix_micros();
  return meta;
}

void FillRegisterErrors(const absl::Status& status, size_t count, uint32_t first_index,
                        v1::RegisterDocumentsReply* reply) {
  for (size_t i = 0; i < count; ++i) {
    v1::RegisterResult* result = reply->add_results();
    result->set_index(first_index + static_cast<uint32_t>(i));
    FillRegisterError(status, result);
  }
  reply->set_failed(reply->failed() + static_cast<uint32_t>(count));
}

void CountRegisterResults(const std::vector<v1::RegisterResult*>& results,
                          v1::RegisterDocumentsReply* reply) {
  for (const v1::RegisterResult* result : results) {
    if (result->has_reply()) {
      reply->set_registered(reply->registered() + 1);
    } else {
      reply->set_failed(reply->failed() + 1);
    }
  }
}

void AddStats(const v1::GetStatsReply& r, v1::GetStatsReply* total) {
  total->set_documents(total->documents() + r.documents());
  total->set_postings(total->postings() + r.postings());
  total->set_chunk_keys(total->chunk_keys() + r.chunk_keys());
  total->set_disk_bytes(total->disk_bytes() + r.disk_bytes());
  total->set_text_bytes(total->text_bytes() + r.text_bytes());
  total->set_postings_disk_bytes(total->postings_disk_bytes() + r.postings_disk_bytes());
  total->set_verify_disk_bytes(total->verify_disk_bytes() + r.verify_disk_bytes());
  total->set_pending_compaction_bytes(total->pending_compaction_bytes() +
                                      r.pending_compaction_bytes());
  total->set_running_compactions(total->running_compactions() + r.running_compactions());
  total->set_block_cache_bytes(total->block_cache_bytes() + r.block_cache_bytes());
  total->set_block_cache_warming(total->block_cache_warming() || r.block_cache_warming());
  total->set_hash_filter_bytes(total->hash_filter_bytes() + r.hash_filter_bytes());
  total->set_hash_filter_filling(total->hash_filter_filling() || r.hash_filter_filling());
  total->set_idle_compaction_due(total->idle_compaction_due() || r.idle_compaction_due());
}

v1::ListDocumentsReply MergeDocumentPages(std::vector<v1::ListDocumentsReply> pages,
                                          uint32_t page_size) {
  std::vector<v1::DocumentInfo> documents;
  bool more = false;
  for (v1::ListDocumentsReply& page : pages) {
    more = more || !page.next_page_token().empty();
    for (v1::DocumentInfo& d : *page.mutable_documents()) documents.push_back(std::move(d));
  }
  std::sort(documents.begin(), documents.end(),
            [](const v1::DocumentInfo& a, const v1::DocumentInfo& b) {
              return a.doc_id() < b.doc_id();
            });
  const size_t size = std::clamp<size_t>(page_size == 0 ? 100 : page_size, 1, 1000);
  if (documents.size() > size) {
    documents.resize(size);
    more = true;
  }
  v1::ListDocumentsReply merged;
  for (v1::DocumentInfo& d : documents) *merged.add_documents() = std::move(d);
  if (more && !documents.empty()) {
    merged.set_next_page_token(std::to_string(merged.documents().rbegin()->doc_id()));
  }
  return merged;
}

v1::RegisterDocumentReply RoutedRegisterReply(const v1::DocumentInfo& info, uint64_t sequence,
                                              const std::array<uint8_t, 32>& sha256) {
  v1::RegisterDocumentReply reply;
  reply.set_doc_id(info.doc_id());
  reply.set_created(info.doc_id() == sequence);
  if (!reply.created() && info.sha256() == Hex(sha256)) reply.set_duplicate_of(info.doc_id());
  reply.set_chunks(info.chunks());
  reply.set_stored_chunks(info.stored_chunks());
  reply.set_format(info.format());
  return reply;
}

std::string Hex(const std::array<uint8_t, 32>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// What a receipt states about the document `result` names, registered under `params`.
ReceiptFields ReceiptFieldsOf(const RegisterResultInfo& result, const ChunkingParams& params) {
  const DocumentRecord& r = result.record;
  ReceiptFields f;
  f.doc_id = r.id;
  if (result.content_sha256.has_value()) f.content_sha256 = Hex(*result.content_sha256);
  f.text_sha256 = Hex(r.sha256);
  f.size_bytes = r.size_bytes;
  f.format = r.format;
  f.chunking = params.Describe();
  f.hash_key_id = params.key_id;
  f.owner = r.owner;
  f.collection = r.collection;
  f.external_id = r.external_id;
  f.registered_unix_micros = r.registered_unix_micros;
  return f;
}


void FillRegisterOutcome(const RegisterResultInfo& result, v1::RegisterDocumentReply* reply) {
  reply->set_doc_id(result.outcome.id);
  reply->set_created(result.outcome.created);
  if (result.outcome.duplicate_of.has_value()) {
    reply->set_duplicate_of(*result.outcome.duplicate_of);
  }
  reply->set_chunks(result.total_chunks);
  reply->set_stored_chunks(result.stored_chunks);
  reply->set_format(std::string(DocumentFormatName(result.format)));
  reply->set_charset(result.charset);
}

void FillRegisterError(const absl::Status& status, v1::RegisterResult* result) {
  result->clear_reply();
  result->set_error_code(static_cast<int32_t>(status.code()));
  result->set_error_message(std::string(status.message()));
}

void FillReceipt(SignedReceipt receipt, v1::Receipt* out) {
  out->set_payload(std::move(receipt.payload));
  out->set_signature(std::move(receipt.signature));
  out->set_key_id(std::move(receipt.key_id));
}

void FillStats(const IndexStats& stats, const CopyDetector& detector, v1::GetStatsReply* reply) {
  reply->set_documents(stats.documents);
  reply->set_postings(stats.postings);
  reply->set_chunk_keys(stats.chunk_keys);
  reply->set_disk_bytes(stats.disk_bytes);
  reply->set_text_bytes(stats.text_bytes);
  reply->set_chunking(detector.params().Describe());
  reply->set_key_id(detector.params().key_id);
  reply->set_max_document_bytes(detector.options().max_document_bytes);
  for (uint32_t files : stats.postings_files_per_level) reply->add_postings_files_per_level(files);
  reply->set_pending_compaction_bytes(stats.pending_compaction_bytes);
  reply->set_postings_disk_bytes(stats.postings_disk_bytes);
  reply->set_verify_disk_bytes(stats.verify_disk_bytes);
  reply->set_running_compactions(stats.running_compactions);
  reply->set_block_cache_bytes(stats.block_cache_bytes);
  reply->set_block_cache_warming(stats.block_cache_warming);
  reply->set_hash_filter_bytes(stats.hash_filter_bytes);
  reply->set_hash_filter_filling(stats.hash_filter_filling);
  reply->set_idle_compaction_due(stats.idle_compaction_due);
  reply->set_bulk_loading(detector.index()->bulk_loading());
}

}  // namespace cops
