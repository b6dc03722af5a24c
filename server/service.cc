#include "server/service.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "access/call_policy.h"
#include "access/report_privacy.h"
#include "core/hash_key.h"
#include "core/scratch.h"
#include "core/status_macros.h"
#include "server/request_log.h"

namespace cops {
namespace {

// The call's cancellation as the check's steps ask it (engine/cancellation_probe.h).
CancellationProbe ProbeOf(grpc::ServerContext& context) {
  return CancellationProbe(context.deadline(), [&context] { return context.IsCancelled(); });
}

constexpr size_t kDefaultPageSize = 100;

}  // namespace

CopyDetectionService::CopyDetectionService(IndexGenerations* generations, Authorizer* authorizer,
                                           UsageLedger* usage, AuditSink* audit,
                                           ReceiptSigner* receipts, DocumentWrites* writes,
                                           AdmissionControl* admission, LogPosition* position,
                                           StreamWatchdog* streams, CheckVerdictCounter* verdicts)
    : generations_(generations),
      authorizer_(authorizer),
      usage_(usage),
      audit_(audit),
      receipts_(receipts),
      local_writes_(writes == nullptr ? std::make_unique<LocalWrites>(generations) : nullptr),
      writes_(writes != nullptr ? writes : local_writes_.get()),
      admission_(admission),
      position_(position),
      streams_(streams),
      verdicts_(verdicts),
      started_(std::chrono::steady_clock::now()) {}

StreamWatchdog::Stream CopyDetectionService::Watch(grpc::ServerContext* context) {
  return streams_ == nullptr ? StreamWatchdog::Stream() : streams_->Watch(context);
}

absl::Status CopyDetectionService::StreamEndedError() const {
  return absl::DeadlineExceededError(
      "stream ended by the server: no message for " +
      absl::FormatDuration(streams_->limits().idle_timeout) + " or open for " +
      absl::FormatDuration(streams_->limits().max_age) +
      " (copsd --stream-idle-timeout, --stream-max-age); open a new one");
}

std::shared_ptr<CopyDetector> CopyDetectionService::Detector() const {
  return generations_->Current();
}

absl::StatusOr<AdmissionControl::Permit> CopyDetectionService::Admit(
    const grpc::ServerContext& context, uint64_t bytes) {
  if (admission_ == nullptr) return AdmissionControl::Permit();
  return admission_->Admit(bytes, absl::FromChrono(context.deadline()));
}

absl::Status CopyDetectionService::NoLogError() {
  return absl::FailedPreconditionError(
      "this copsd does not follow a registration log: a log sequence means nothing here");
}

std::chrono::steady_clock::time_point CopyDetectionService::ReadYourWritesDeadline(
    const grpc::ServerContext& context) {
  const auto wait = std::chrono::steady_clock::now() + kReadYourWritesWait;
  const auto call_left = context.deadline() - std::chrono::system_clock::now();
  return std::min(wait, std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::max(call_left, std::chrono::system_clock::duration(0))));
}

absl::Status CopyDetectionService::AwaitLogSequence(const grpc::ServerContext& context,
                                                    uint64_t sequence) {
  if (sequence == 0) return absl::OkStatus();
  if (position_ == nullptr) return NoLogError();
  return position_->AwaitApplied(sequence, ReadYourWritesDeadline(context));
}

namespace {

// Content bytes of a bulk registration window at most (the document count comes from
// CopyDetectorOptions::bulk_window_documents).
constexpr uint64_t kBulkWindowBytes = 16u << 20;

}  // namespace

void CopyDetectionService::FillRegisterReply(const Principal& principal,
                                             const RegisterResultInfo& result,
                                             const ChunkingParams& params, bool with_receipt,
                                             v1::RegisterDocumentReply* reply) const {
  FillRegisterOutcome(result, reply);
  if (receipts_ == nullptr || !with_receipt) return;
  // An existing document's receipt names its owner and collection: only for callers who
  // may read its record anyway.
  if (!result.outcome.created &&
      !AuthorizeExisting(*authorizer_, principal, Action::kReadDocument, result.record).ok()) {
    return;
  }
  absl::StatusOr<SignedReceipt> receipt = receipts_->Sign(ReceiptFieldsOf(result, params));
  if (!receipt.ok()) {  // the registration stands; only its receipt is missing
    LogEvent(LogLevel::kError, "receipt_not_signed",
             {{"doc_id", std::to_string(result.outcome.id)}, {"error", receipt.status().ToString()}});
    return;
  }
  FillReceipt(*std::move(receipt), reply->mutable_receipt());
}

absl::Status CopyDetectionService::TakeToken(const Principal& principal) {
  return usage_->Reserve(principal, UsageCost{}).status();
}

absl::StatusOr<CopyDetectionService::AdmittedRegistration>
CopyDetectionService::AdmitRegistration(const Principal& principal, const v1::Document& doc) {
  AdmittedRegistration admitted;
  COPS_RETURN_IF_ERROR(
      authorizer_->Authorize(principal, Action::kRegister, doc.metadata().collection()));
  COPS_ASSIGN_OR_RETURN(admitted.meta,
                        RegistrationRecord(authorizer_->PolicyFor(doc.metadata().collection()),
                                           principal,
                                           MetadataFromProto(doc.metadata()),
                                           Detector()->NowMicros()));
  COPS_ASSIGN_OR_RETURN(admitted.usage,
                        usage_->Reserve(principal, RegistrationCost(doc.content().size(),
                                                                    admitted.meta)));
  COPS_RETURN_IF_ERROR(authorizer_->EnsureCollection(admitted.meta.collection));
  return admitted;
}

absl::Status CopyDetectionService::RegisterOne(const Principal& principal,
                                               const v1::RegisterDocumentRequest& request,
                                               v1::RegisterDocumentReply* reply) {
  const v1::Document& doc = request.document();
  COPS_ASSIGN_OR_RETURN(DocumentFormat format, FormatFromProto(doc.format()));
  COPS_ASSIGN_OR_RETURN(AdmittedRegistration admitted, AdmitRegistration(principal, doc));
  COPS_ASSIGN_OR_RETURN(RegisterResultInfo result,
                        writes_->Register(doc.content(), format, admitted.meta));
  // A duplicate (or a retry) creates nothing and uses no quota: the reservation is released.
  if (result.outcome.created) admitted.usage.Commit();
  FillRegisterReply(principal, result, result.params, !request.omit_receipt(), reply);
  return absl::OkStatus();
}

void CopyDetectionService::RegisterWindow(const Principal& principal,
                                          std::span<const v1::RegisterDocumentRequest> requests,
                                          uint32_t first_index, v1::RegisterDocumentsReply* reply) {
  std::vector<AdmittedRegistration> admitted(requests.size());
  std::vector<RegisterInput> inputs;
  std::vector<size_t> input_of;  // window position of inputs[j]
  std::vector<v1::RegisterResult*> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    results[i] = reply->add_results();
    results[i]->set_index(first_index + static_cast<uint32_t>(i));
    const v1::Document& doc = requests[i].document();
    absl::StatusOr<DocumentFormat> format = FormatFromProto(doc.format());
    absl::StatusOr<AdmittedRegistration> admission =
        format.ok() ? AdmitRegistration(principal, doc) : format.status();
    if (!admission.ok()) {
      FillRegisterError(admission.status(), results[i]);
      continue;
    }
    admitted[i] = *std::move(admission);
    inputs.push_back(RegisterInput{doc.content(), *format, &admitted[i].meta});
    input_of.push_back(i);
  }
  // Locally one atomic index write; through the log one event per document (batching
  // publishes: docs/scale-out.md).
  std::vector<absl::StatusOr<RegisterResultInfo>> outcomes;
  const absl::Status written = writes_->RegisterBatch(inputs, &outcomes);
  for (size_t j = 0; j < input_of.size(); ++j) {
    v1::RegisterResult* result = results[input_of[j]];
    if (j < outcomes.size() && outcomes[j].ok()) {
      if (outcomes[j]->outcome.created) admitted[input_of[j]].usage.Commit();
      FillRegisterReply(principal, *outcomes[j], outcomes[j]->params,
                        !requests[input_of[j]].omit_receipt(), result->mutable_reply());
    } else {
      FillRegisterError(j < outcomes.size() ? outcomes[j].status() : written, result);
    }
  }
  CountRegisterResults(results, reply);
}

grpc::Status CopyDetectionService::RegisterDocument(grpc::ServerContext* context,
                                                    const v1::RegisterDocumentRequest* request,
                                                    v1::RegisterDocumentReply* reply) {
  return Serve("RegisterDocument", context, [&](const Principal& principal, RequestLog& log) {
    log.add_in_bytes(request->document().content().size());
    absl::StatusOr<AdmissionControl::Permit> permit =
        Admit(*context, request->document().content().size());
    if (!permit.ok()) return permit.status();
    absl::Status status = RegisterOne(principal, *request, reply);
    if (status.ok()) log.add_field("doc_id", std::to_string(reply->doc_id()));
    return status;
  });
}

grpc::Status CopyDetectionService::RegisterDocuments(
    grpc::ServerContext* context, grpc::ServerReader<v1::RegisterDocumentRequest>* reader,
    v1::RegisterDocumentsReply* reply) {
  return Serve("RegisterDocuments", context, [&](const Principal& caller, RequestLog& log) {
    // Each message authenticates again (a revoked key ends the stream).
    absl::StatusOr<Principal> principal = caller;
    // Documents are read into a window and registered together (one index write per window);
    // each still gets its own result.
    const size_t window_documents =
        std::max<uint32_t>(Detector()->options().bulk_window_documents, 1);
    const uint32_t max_documents = Detector()->options().max_documents_per_stream;
    std::vector<v1::RegisterDocumentRequest> window;
    size_t window_bytes = 0;
    uint32_t read = 0;
    auto flush = [&] {
      const uint32_t first_index = read - static_cast<uint32_t>(window.size());
      if (absl::StatusOr<AdmissionControl::Permit> permit = Admit(*context, window_bytes);
          permit.ok()) {
        RegisterWindow(*principal, window, first_index, reply);
      } else {
        FillRegisterErrors(permit.status(), window.size(), first_index, reply);
      }
      window.clear();
      window_bytes = 0;
    };
    StreamWatchdog::Stream watch = Watch(context);
    v1::RegisterDocumentRequest request;
    while (reader->Read(&request)) {
      watch.Touch();
      if (context->IsCancelled()) {
        return absl::DeadlineExceededError(
            "bulk registration cancelled or past its deadline after " +
            std::to_string(reply->registered() + reply->failed()) + " documents");
      }
      // Each document on the key's current standing: a revoked key ends the stream, and the
      // documents of the window not yet written are not registered.
      principal = authorizer_->Authenticate(*context);
      if (!principal.ok()) return principal.status();
      if (read == max_documents) {
        // The reply must stay under gRPC's message limit: end the stream here, keeping the
        // results of everything registered so far.
        if (!window.empty()) flush();
        FillRegisterErrors(absl::ResourceExhaustedError("a RegisterDocuments stream carries at most " +
                                                std::to_string(max_documents) +
                                                " documents: this one and any after it "
                                                "were not registered; send them in another stream"),
                   1, read, reply);
        break;
      }
      ++read;
      log.add_in_bytes(request.document().content().size());
      window_bytes += request.document().content().size();
      window.push_back(std::move(request));
      request.Clear();
      if (window.size() >= window_documents || window_bytes >= kBulkWindowBytes) flush();
    }
    if (watch.ended()) return StreamEndedError();
    if (!window.empty()) flush();
    log.add_field("registered", std::to_string(reply->registered()));
    log.add_field("failed", std::to_string(reply->failed()));
    return absl::OkStatus();
  });
}

grpc::Status CopyDetectionService::UnregisterDocument(grpc::ServerContext* context,
                                                      const v1::UnregisterDocumentRequest* request,
                                                      v1::UnregisterDocumentReply* reply) {
  return Serve("UnregisterDocument", context, [&](const Principal& principal, RequestLog& log) {
    log.add_field("doc_id", std::to_string(request->doc_id()));
    auto admit = [&](const CopyDetector& detector) -> absl::Status {
      COPS_ASSIGN_OR_RETURN(DocumentRecord record, detector.Get(request->doc_id()));
      COPS_RETURN_IF_ERROR(AuthorizeExisting(*authorizer_, principal, Action::kUnregister, record));
      return TakeToken(principal);
    };
    // Asked outside the registration lock: the log's applier takes it to apply this very
    // event. Records do not change, so the answer holds until the write.
    COPS_RETURN_IF_ERROR(admit(*Detector()));
    COPS_ASSIGN_OR_RETURN(const uint64_t sequence, writes_->Unregister(request->doc_id()));
    reply->set_log_sequence(sequence);
    if (sequence != 0) log.add_field("log_sequence", std::to_string(sequence));
    return absl::OkStatus();
  });
}

grpc::Status CopyDetectionService::GetDocument(grpc::ServerContext* context,
                                               const v1::GetDocumentRequest* request,
                                               v1::GetDocumentReply* reply) {
  return Serve("GetDocument", context, [&](const Principal& principal, RequestLog& log) {
    DocId id = request->doc_id();
    const bool awaits_log = request->log_sequence() != 0;
    if (awaits_log) {  // the document a log event registered
      if (position_ == nullptr) return NoLogError();
      // The wait holds this thread: only for a caller within its rate, and bounded.
      if (absl::Status token = TakeToken(principal); !token.ok()) return token;
      absl::StatusOr<RegisterResultInfo> outcome =
          position_->OutcomeOf(request->log_sequence(), ReadYourWritesDeadline(*context));
      if (!outcome.ok()) return outcome.status();
      id = outcome->outcome.id;
    }
    const std::shared_ptr<CopyDetector> detector = Detector();
    absl::StatusOr<DocumentRecord> record = detector->Get(id);
    if (!record.ok()) return record.status();
    absl::Status status =
        AuthorizeExisting(*authorizer_, principal, Action::kReadDocument, *record);
    if (status.ok() && request->include_content()) {
      status = AuthorizeExisting(*authorizer_, principal, Action::kReadText, *record);
    }
    if (status.ok() && !awaits_log) status = TakeToken(principal);
    if (!status.ok()) return status;
    if (request->include_content()) {
      absl::StatusOr<std::string> content = detector->GetContent(id);
      if (!content.ok()) return content.status();
      reply->mutable_document()->set_content(*std::move(content));
    }
    FillDocumentInfo(*record, reply->mutable_document());
    log.add_out_bytes(reply->document().content().size());
    return absl::OkStatus();
  });
}

grpc::Status CopyDetectionService::ListDocuments(grpc::ServerContext* context,
                                                 const v1::ListDocumentsRequest* request,
                                                 v1::ListDocumentsReply* reply) {
  return Serve("ListDocuments", context, [&](const Principal& principal, RequestLog& /*log*/) {
    const std::shared_ptr<CopyDetector> detector = Detector();
    absl::Status status = AuthorizeNamedCollection(*authorizer_, principal, Action::kReadDocument,
                                                   request->collection(), *detector->index());
    if (status.ok()) status = TakeToken(principal);
    if (!status.ok()) return status;
    const size_t page_size = request->page_size() == 0 ? kDefaultPageSize : request->page_size();
    absl::StatusOr<DocumentPage> page =
        detector->List(request->page_token(), page_size, request->collection());
    if (!page.ok()) return page.status();
    const std::optional<std::vector<std::string>> usable =
        authorizer_->UsableCollections(principal);
    for (const DocumentRecord& r : page->documents) {
      if (usable && std::find(usable->begin(), usable->end(), r.collection) == usable->end()) {
        continue;
      }
      FillDocumentInfo(r, reply->add_documents());
    }
    reply->set_next_page_token(page->next_page_token);
    return absl::OkStatus();
  });
}

absl::Status CopyDetectionService::CheckOne(grpc::ServerContext* context,
                                            const CancellationProbe& probe,
                                            const Principal& principal,
                                            const v1::CheckDocumentRequest& request,
                                            v1::CheckDocumentReply* reply) {
  reply->set_request_id(request.request_id());
  const std::vector<std::string> collections(request.collections().begin(),
                                             request.collections().end());
  // The policy first: a refused call takes no token and waits for nothing.
  COPS_RETURN_IF_ERROR(AuthorizeCheck(*authorizer_, principal, collections));
  const std::shared_ptr<CopyDetector> detector = Detector();
  COPS_ASSIGN_OR_RETURN(CheckRequestInfo info,
                        CheckRequestFromProto(request, detector->options().heavy_revisions));
  // Floors the policy sets (checkers: no passages or counts of a few words); the reply's
  // params show the values used.
  const CheckFloors floors = authorizer_->CheckFloorsFor(principal);
  info.options.min_passage_units =
      std::max(info.options.min_passage_units, floors.min_passage_units);
  info.options.min_count = std::max(info.options.min_count, floors.min_count);
  // Refused for lack of room before any rate token is taken or memory is allocated for it.
  COPS_ASSIGN_OR_RETURN(const AdmissionControl::Permit permit,
                        Admit(*context, request.content().size()));
  COPS_RETURN_IF_ERROR(TakeToken(principal));
  // A read-your-writes wait holds this thread: only once the call is admitted and within
  // its rate, and at most kReadYourWritesWait. The collections' existence is asked after
  // it, since the awaited registration may have created one.
  COPS_RETURN_IF_ERROR(AwaitLogSequence(*context, request.min_log_sequence()));
  COPS_ASSIGN_OR_RETURN(info.collections, CheckCollections(*authorizer_, principal, collections,
                                                           *detector->index()));
  info.template_collections = SearchedTemplates(*authorizer_, info.collections);
  info.cancelled = [&probe] { return probe.Cancelled(); };
  // The detector searches only info.collections and finalizes the report (order, max_results,
  // violation); RedactReport then hides what this caller may not see of documents it does not
  // own.
  COPS_ASSIGN_OR_RETURN(CheckResult result, detector->Check(info));
  std::vector<AuditRecord> hits = AuditedHits(
      *authorizer_, RedactReport(*authorizer_, principal, &result.report, &result.records));
  FillCheckReply(result, info, request.options(), detector->params(), reply);
  if (verdicts_ != nullptr) verdicts_->Count(*reply);
  if (!hits.empty()) {
    // The digest lets an owner recognize the checked document, which is never kept.
    const std::string digest = Hex(Sha256(request.content()));
    for (AuditRecord& hit : hits) hit.test_sha256 = digest;
    audit_->Record(principal.name, std::move(hits));
  }
  return absl::OkStatus();
}

grpc::Status CopyDetectionService::CheckDocument(grpc::ServerContext* context,
                                                 const v1::CheckDocumentRequest* request,
                                                 v1::CheckDocumentReply* reply) {
  return Serve("CheckDocument", context, [&](const Principal& principal, RequestLog& log) {
    log.add_in_bytes(request->content().size());
    const CancellationProbe probe = ProbeOf(*context);
    absl::Status status = CheckOne(context, probe, principal, *request, reply);
    if (status.ok()) {
      log.add_field("matches", std::to_string(reply->matches_size()));
      log.add_field("violation", reply->violation() ? "true" : "false");
    }
    return status;
  });
}

grpc::Status CopyDetectionService::CheckStream(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::CheckDocumentReply, v1::CheckDocumentRequest>* stream) {
  return Serve("CheckStream", context, [&](const Principal& caller, RequestLog& log) {
    // Each message authenticates again (a revoked key ends the stream).
    absl::StatusOr<Principal> principal = caller;
    v1::CheckDocumentRequest request;
    v1::CheckDocumentReply reply;
    uint64_t messages = 0;
    StreamWatchdog::Stream watch = Watch(context);
    // A client that cancels the stream ends its reads; past the deadline the stream stops here.
    CancellationProbe probe = ProbeOf(*context);
    while (stream->Read(&request)) {
      watch.Touch();
      probe.Restart();
      if (probe.Cancelled()) {
        return absl::DeadlineExceededError("check stream cancelled or past its deadline");
      }
      // Each message on the key's current standing: a revoked key ends the stream.
      principal = authorizer_->Authenticate(*context);
      if (!principal.ok()) return principal.status();
      ++messages;
      log.add_in_bytes(request.content().size());
      reply.Clear();
      absl::Status status = CheckOne(context, probe, *principal, request, &reply);
      if (!status.ok()) FillCheckError(status, request.request_id(), &reply);
      if (!stream->Write(reply)) break;
      // One large document does not stay resident for the rest of a long stream.
      if (request.content().capacity() > kScratchKeepBytes) request = v1::CheckDocumentRequest();
    }
    log.add_field("messages", std::to_string(messages));
    if (watch.ended()) return StreamEndedError();
    return absl::OkStatus();
  });
}

grpc::Status CopyDetectionService::GetStats(grpc::ServerContext* context,
                                            const v1::GetStatsRequest* /*request*/,
                                            v1::GetStatsReply* reply) {
  return Serve("GetStats", context, [&](const Principal& principal, RequestLog& /*log*/) {
    absl::Status status = authorizer_->Authorize(principal, Action::kStats, "");
    if (status.ok()) status = TakeToken(principal);
    if (!status.ok()) return status;
    const std::shared_ptr<CopyDetector> detector = Detector();
    FillStats(detector->Stats(), *detector, reply);
    reply->set_uptime_seconds(std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::steady_clock::now() - started_)
                                  .count());
    return absl::OkStatus();
  });
}

grpc::Status CopyDetectionService::ListMatches(grpc::ServerContext* context,
                                               const v1::ListMatchesRequest* request,
                                               v1::ListMatchesReply* reply) {
  return Serve("ListMatches", context, [&](const Principal& principal, RequestLog& log) {
    MatchQuery query;
    query.owner = request->owner().empty() ? principal.name : request->owner();
    query.doc_id = request->doc_id();
    query.since_unix_micros = request->since_unix_micros();
    query.limit = request->limit() == 0 ? 1000 : request->limit();
    absl::Status status = authorizer_->Authorize(principal, Action::kReadMatches, "");
    if (status.ok() && query.owner != principal.name && principal.role != Role::kAdmin) {
      status = absl::PermissionDeniedError("principal '" + principal.name +
                                           "' may list the matches of its own documents only");
    }
    // A scoped admin sees the entries of its collections only, whoever owns the documents.
    const bool scoped_admin =
        principal.role == Role::kAdmin && !authorizer_->AuthorizeAdministration(principal, {}).ok();
    if (status.ok()) status = TakeToken(principal);
    if (!status.ok()) return status;
    absl::StatusOr<std::vector<AuditRecord>> entries = audit_->Matches(query);
    if (!entries.ok()) return entries.status();
    for (const AuditRecord& r : *entries) {
      if (scoped_admin && !authorizer_->AuthorizeAdministration(principal, {r.collection}).ok()) {
        continue;
      }
      FillAuditEntry(r, reply->add_entries());
    }
    log.add_field("entries", std::to_string(reply->entries_size()));
    return absl::OkStatus();
  });
}

}  // namespace cops
