#ifndef COPS_SERVER_SERVICE_H_
#define COPS_SERVER_SERVICE_H_

// The gRPC CopyDetection service (proto/cops.proto): a thin transport over CopyDetector.
// Each handler authenticates and authorizes the caller (Authorizer), lets a check or
// registration start when there is room for it (AdmissionControl), reserves its usage
// (UsageLedger), converts the request, calls the detector, settles the reservation, fills the
// reply, hands a check's hits to the AuditSink and returns ToGrpc(status); every call is
// logged once (server/request_log.h).
//
// Thread-safety: stateless beyond its dependencies, which are thread-safe; handlers run
// concurrently on the server's thread pool.

#include <chrono>
#include <memory>
#include <span>

#include "access/admission_control.h"
#include "access/audit_sink.h"
#include "access/authorizer.h"
#include "access/stream_watchdog.h"
#include "access/usage_ledger.h"
#include "engine/cancellation_probe.h"
#include "engine/copy_detector.h"
#include "engine/document_writes.h"
#include "engine/index_generations.h"
#include "engine/receipt_signer.h"
#include "proto/cops.grpc.pb.h"
#include "protocol/check_reply.h"
#include "protocol/documents.h"
#include "replication/log_replica.h"
#include "server/check_verdicts.h"
#include "server/request_log.h"

namespace cops {

class CopyDetectionService final : public v1::CopyDetection::Service {
 public:
  // Serves the live generation of `generations`, following key rotations: each call uses
  // one generation throughout; registrations and unregistrations go through
  // IndexGenerations::WithWriter. Each registration's reply carries a receipt signed by
  // `receipts` (none when it is null). With `writes` (copsd --log / --follow,
  // replication/log_replica.h), registrations and unregistrations go through it instead of the
  // local index; checks and reads stay local, and `position` (the same nodes) lets a call
  // wait for a log sequence (docs/scale-out.md, read-your-writes). Checks, registrations and bulk
  // registration windows are admitted by `admission` (a check of a CheckStream per message, a
  // refusal in its reply; a refused window fails its documents); null = no limit. Streams
  // (CheckStream, RegisterDocuments) are ended by `streams` when idle or too old; null = no
  // limit. Each message of a stream authenticates the caller again, so a revoked key ends
  // its streams at their next message. Each answered check is counted in `verdicts` (null:
  // not counted). None is owned; all must outlive the service.
  CopyDetectionService(IndexGenerations* generations, Authorizer* authorizer, UsageLedger* usage,
                       AuditSink* audit, ReceiptSigner* receipts = nullptr,
                       DocumentWrites* writes = nullptr, AdmissionControl* admission = nullptr,
                       LogPosition* position = nullptr, StreamWatchdog* streams = nullptr,
                       CheckVerdictCounter* verdicts = nullptr);

  // How long a call naming a log sequence (CheckDocumentRequest.min_log_sequence,
  // GetDocumentRequest.log_sequence) waits for this node to apply it, at most. The wait
  // comes after the call's authorization, admission and rate token.
  static constexpr std::chrono::milliseconds kReadYourWritesWait{1000};

  grpc::Status RegisterDocument(grpc::ServerContext* context,
                                const v1::RegisterDocumentRequest* request,
                                v1::RegisterDocumentReply* reply) override;
  grpc::Status RegisterDocuments(grpc::ServerContext* context,
                                 grpc::ServerReader<v1::RegisterDocumentRequest>* reader,
                                 v1::RegisterDocumentsReply* reply) override;
  grpc::Status UnregisterDocument(grpc::ServerContext* context,
                                  const v1::UnregisterDocumentRequest* request,
                                  v1::UnregisterDocumentReply* reply) override;
  grpc::Status GetDocument(grpc::ServerContext* context, const v1::GetDocumentRequest* request,
                           v1::GetDocumentReply* reply) override;
  grpc::Status ListDocuments(grpc::ServerContext* context,
                             const v1::ListDocumentsRequest* request,
                             v1::ListDocumentsReply* reply) override;
  grpc::Status CheckDocument(grpc::ServerContext* context,
                             const v1::CheckDocumentRequest* request,
                             v1::CheckDocumentReply* reply) override;
  grpc::Status CheckStream(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::CheckDocumentReply, v1::CheckDocumentRequest>* stream)
      override;
  grpc::Status GetStats(grpc::ServerContext* context, const v1::GetStatsRequest* request,
                        v1::GetStatsReply* reply) override;
  grpc::Status ListMatches(grpc::ServerContext* context, const v1::ListMatchesRequest* request,
                           v1::ListMatchesReply* reply) override;

 private:
  // Logs, authenticates and runs `body` as the caller (ServeAuthenticated).
  template <typename Body>
  grpc::Status Serve(std::string_view method, grpc::ServerContext* context, Body&& body) {
    return ServeAuthenticated(method, *context, *authorizer_, std::forward<Body>(body));
  }
  // A registration let in: its metadata as the index records it and its reserved quota.
  struct AdmittedRegistration {
    DocumentRecord meta;
    Reservation usage;  // Commit() once the document is created; else released
  };
  // The registration path before the write: authorizes registering `doc`, reserves its
  // quota and creates its collection when new.
  absl::StatusOr<AdmittedRegistration> AdmitRegistration(const Principal& principal,
                                                         const v1::Document& doc);
  // Takes one rate token for an operation that charges no quota.
  absl::Status TakeToken(const Principal& principal);
  absl::Status RegisterOne(const Principal& principal, const v1::RegisterDocumentRequest& request,
                           v1::RegisterDocumentReply* reply);
  // The reply of a registration under `params`, with its receipt when `with_receipt` (see
  // Receipt in cops.proto; false: the request's omit_receipt).
  void FillRegisterReply(const Principal& principal, const RegisterResultInfo& result,
                         const ChunkingParams& params, bool with_receipt,
                         v1::RegisterDocumentReply* reply) const;
  // Registers a window of a bulk stream with one index write, appending one result per
  // request (indexes first_index...) to `reply` and counting them.
  void RegisterWindow(const Principal& principal,
                      std::span<const v1::RegisterDocumentRequest> requests, uint32_t first_index,
                      v1::RegisterDocumentsReply* reply);
  // `probe` tells the check's steps whether to stop (the call cancelled or past its deadline).
  absl::Status CheckOne(grpc::ServerContext* context, const CancellationProbe& probe,
                        const Principal& principal, const v1::CheckDocumentRequest& request,
                        v1::CheckDocumentReply* reply);

  // Room for a check or registration of `bytes` document bytes, waiting at most until the
  // call's deadline (AdmissionControl::Admit); an empty permit without admission control.
  absl::StatusOr<AdmissionControl::Permit> Admit(const grpc::ServerContext& context,
                                                 uint64_t bytes);
  // The detector a call uses; it stays valid while the pointer is held.
  std::shared_ptr<CopyDetector> Detector() const;
  // Waits until this node has applied the log up to `sequence` (0: at once); UNAVAILABLE
  // when it has not within kReadYourWritesWait or the call's deadline.
  absl::Status AwaitLogSequence(const grpc::ServerContext& context, uint64_t sequence);
  static std::chrono::steady_clock::time_point ReadYourWritesDeadline(
      const grpc::ServerContext& context);
  static absl::Status NoLogError();
  // A stream under the watchdog (watching nothing without one).
  StreamWatchdog::Stream Watch(grpc::ServerContext* context);
  // Why the watchdog ended a stream. REQUIRES: streams_ != null.
  absl::Status StreamEndedError() const;

  IndexGenerations* const generations_;
  Authorizer* const authorizer_;
  UsageLedger* const usage_;
  AuditSink* const audit_;
  ReceiptSigner* const receipts_;
  // Where registrations and unregistrations go: the `writes` given, else local_writes_.
  const std::unique_ptr<LocalWrites> local_writes_;
  DocumentWrites* const writes_;
  AdmissionControl* const admission_;
  LogPosition* const position_;  // null: no registration log
  StreamWatchdog* const streams_;  // null: streams without time limits
  CheckVerdictCounter* const verdicts_;  // null: checks not counted
  const std::chrono::steady_clock::time_point started_;
};

}  // namespace cops

#endif  // COPS_SERVER_SERVICE_H_
