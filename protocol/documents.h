#ifndef COPS_PROTOCOL_DOCUMENTS_H_
#define COPS_PROTOCOL_DOCUMENTS_H_

// Documents, their records and the audit trail as the protocol carries them
// (proto/cops.proto), to and from the domain types (storage/document_record.h,
// convert/converter.h, core/receipt.h).
//
// Thread-safety: plain functions.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "convert/converter.h"
#include "core/params.h"
#include "core/receipt.h"
#include "engine/copy_detector.h"
#include "proto/cops.pb.h"
#include "storage/principal_store.h"

namespace cops {

// The request's document format; INVALID_ARGUMENT for an unknown one (kDocumentFormats).
absl::StatusOr<DocumentFormat> FormatFromProto(int format);

// The metadata a request asks to record (access/call_policy.h's RegistrationRecord decides
// what is recorded).
DocumentRecord MetadataFromProto(const v1::DocumentMetadata& metadata);

// A document's record as DocumentInfo shows it (its content is the caller's to add).
void FillDocumentInfo(const DocumentRecord& record, v1::DocumentInfo* out);

// An audit record as the protocol shows it (ListMatches, Admin.QueryAudit).
void FillAuditEntry(const AuditRecord& record, v1::AuditEntry* out);

// What a receipt states about the document `result` names, registered under `params`.
ReceiptFields ReceiptFieldsOf(const RegisterResultInfo& result, const ChunkingParams& params);

// A registration's outcome as RegisterDocumentReply carries it (its receipt aside).
void FillRegisterOutcome(const RegisterResultInfo& result, v1::RegisterDocumentReply* reply);

// A document of a RegisterDocuments stream that failed with `status`: the error, no reply.
void FillRegisterError(const absl::Status& status, v1::RegisterResult* result);

// Fails `count` documents of a RegisterDocuments stream (indexes first_index...) with
// `status`: one result each, counted as failed.
void FillRegisterErrors(const absl::Status& status, size_t count, uint32_t first_index,
                        v1::RegisterDocumentsReply* reply);

// Counts `results` (of `reply`) as registered (with a reply) or failed.
void CountRegisterResults(const std::vector<v1::RegisterResult*>& results,
                          v1::RegisterDocumentsReply* reply);

// A signed receipt as the protocol carries it (see Receipt in cops.proto).
void FillReceipt(SignedReceipt receipt, v1::Receipt* out);

// The index figures of `detector` (its `stats`) as GetStats answers them; the uptime is the
// caller's.
void FillStats(const IndexStats& stats, const CopyDetector& detector, v1::GetStatsReply* reply);

// Adds a partition's index figures to the cluster's `total` (a router's GetStats): counts and
// bytes summed, the cache warming when any partition's is; the rest stays `total`'s.
void AddStats(const v1::GetStatsReply& partition, v1::GetStatsReply* total);

// One ListDocuments page from the pages of every partition, each starting after the same
// id: the first `page_size` documents of their union in id order (0: 100; at most 1000), and
// a next page token when any partition has more.
v1::ListDocumentsReply MergeDocumentPages(std::vector<v1::ListDocumentsReply> pages,
                                          uint32_t page_size);

// A routed registration's reply from the record a replica shows for log event `sequence`:
// created when the record is that event's document, a duplicate of it when the record holds
// the same text (`sha256`, of the canonical text), else an older registration's document.
v1::RegisterDocumentReply RoutedRegisterReply(const v1::DocumentInfo& applied, uint64_t sequence,
                                              const std::array<uint8_t, 32>& sha256);

// Lower-case hex of a digest, as DocumentInfo.sha256 carries it.
std::string Hex(const std::array<uint8_t, 32>& bytes);

}  // namespace cops

#endif  // COPS_PROTOCOL_DOCUMENTS_H_
