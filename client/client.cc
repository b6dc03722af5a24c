#include "client/client.h"

#include <algorithm>
#include <cctype>
#include <future>

#include "convert/converter.h"
#include "core/match.h"
#include "core/status_macros.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"

namespace cops {

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::StatusOr<v1::RegisterDocumentReply> ResultOf(const v1::RegisterResult& result) {
  if (result.has_reply()) return result.reply();
  const auto code = static_cast<absl::StatusCode>(result.error_code());
  return absl::Status(code == absl::StatusCode::kOk ? absl::StatusCode::kUnknown : code,
                      result.error_message());
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  if (options.max_reconnect_backoff_ms > 0) {
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, options.max_reconnect_backoff_ms);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                std::min(options.max_reconnect_backoff_ms, 1000));
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                std::min(options.max_reconnect_backoff_ms, 1000));
  }
  if (options.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  COPS_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                        OpenSecureChannel(options.target, options.security, args));
  return std::unique_ptr<Client>(new Client(options, std::move(channel)));
}

std::unique_ptr<Client> Client::OverChannel(std::shared_ptr<grpc::Channel> channel,
                                            const ClientOptions& options) {
  return std::unique_ptr<Client>(new Client(options, std::move(channel)));
}

void Client::Prepare(grpc::ClientContext* context) const {
  AttachApiKey(options_.security, context);
  context->set_deadline(std::chrono::system_clock::now() + options_.timeout);
}

absl::StatusOr<v1::RegisterDocumentReply> Client::Register(const v1::Document& document,
                                                           bool receipt) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::RegisterDocumentRequest request;
  *request.mutable_document() = document;
  request.set_omit_receipt(!receipt);
  v1::RegisterDocumentReply reply;
  COPS_RETURN_IF_ERROR(FromGrpc(stub_->RegisterDocument(&context, request, &reply)));
  return reply;
}

absl::StatusOr<v1::RegisterDocumentsReply> Client::RegisterMany(
    const std::vector<v1::Document>& documents, bool receipts) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::RegisterDocumentsReply reply;
  std::unique_ptr<grpc::ClientWriter<v1::RegisterDocumentRequest>> writer =
      stub_->RegisterDocuments(&context, &reply);
  v1::RegisterDocumentRequest request;
  request.set_omit_receipt(!receipts);
  for (const v1::Document& d : documents) {
    *request.mutable_document() = d;
    if (!writer->Write(request)) break;  // the server ended the call; Finish() says why
  }
  writer->WritesDone();
  COPS_RETURN_IF_ERROR(FromGrpc(writer->Finish()));
  return reply;
}

absl::StatusOr<v1::UnregisterDocumentReply> Client::Unregister(uint64_t doc_id) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::UnregisterDocumentRequest request;
  request.set_doc_id(doc_id);
  v1::UnregisterDocumentReply reply;
  COPS_RETURN_IF_ERROR(FromGrpc(stub_->UnregisterDocument(&context, request, &reply)));
  return reply;
}

absl::StatusOr<v1::DocumentInfo> Client::Get(uint64_t doc_id, bool include_content) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::GetDocumentRequest request;
  request.set_doc_id(doc_id);
  request.set_include_content(include_content);
  v1::GetDocumentReply reply;
  COPS_RETURN_IF_ERROR(FromGrpc(stub_->GetDocument(&context, request, &reply)));
  return reply.document();
}

absl::StatusOr<v1::ListDocumentsReply> Client::List(uint32_t page_size,
                                                    const std::string& page_token,
                                                    const std::string& collection) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::ListDocumentsRequest request;
  request.set_page_size(page_size);
  request.set_page_token(page_token);
  request.set_collection(collection);
  v1::ListDocumentsReply reply;
  COPS_RETURN_IF_ERROR(FromGrpc(stub_->ListDocuments(&context, request, &reply)));
  return reply;
}

absl::StatusOr<v1::CheckDocumentReply> Client::Check(const v1::CheckDocumentRequest& request) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::CheckDocumentReply reply;
  COPS_RETURN_IF_ERROR(FromGrpc(stub_->CheckDocument(&context, request, &reply)));
  return reply;
}

absl::StatusOr<v1::GetStatsReply> Client::Stats() {
  grpc::ClientContext context;
  Prepare(&context);
  v1::GetStatsReply reply;
  COPS_RETURN_IF_ERROR(FromGrpc(stub_->GetStats(&context, v1::GetStatsRequest(), &reply)));
  return reply;
}

absl::StatusOr<v1::ListMatchesReply> Client::ListMatches(const v1::ListMatchesRequest& request) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::ListMatchesReply reply;
  COPS_RETURN_IF_ERROR(FromGrpc(stub_->ListMatches(&context, request, &reply)));
  return reply;
}

absl::Status Client::Health() {
  // grpc.health.v1 is not among Debian's generated protos: the call goes through the generic
  // stub with the messages encoded by hand. The request is an empty HealthCheckRequest (the
  // whole server); the reply is HealthCheckResponse { ServingStatus status = 1; }.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.timeout);
  grpc::GenericStub stub(channel_);
  grpc::Slice no_bytes{std::string()};  // a buffer without slices is not a message
  const grpc::ByteBuffer request(&no_bytes, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                 &response, [&done](grpc::Status status) { done.set_value(std::move(status)); });
  if (absl::Status s = FromGrpc(done.get_future().get()); !s.ok()) return s;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::InternalError("health: unreadable reply");
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  // Field 1, varint: tag 0x08 and one byte (the enum's values are 0-3). Absent: UNKNOWN.
  const int status = bytes.size() >= 2 && bytes[0] == 0x08 ? bytes[1] : 0;
  if (status == 1) return absl::OkStatus();
  static constexpr const char* kNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING",
                                           "SERVICE_UNKNOWN"};
  const std::string name =
      status >= 0 && status < 4 ? kNames[status] : "status " + std::to_string(status);
  return absl::UnavailableError("health: server reports " + name);
}

// The tables of convert/converter.h and core/match.h; their values are the proto's.
absl::StatusOr<v1::DocumentFormat> ParseFormatName(const std::string& name) {
  COPS_ASSIGN_OR_RETURN(DocumentFormat format, ParseDocumentFormat(name));
  return static_cast<v1::DocumentFormat>(format);
}

absl::StatusOr<v1::DecisionFunction> ParseFunctionName(const std::string& name) {
  COPS_ASSIGN_OR_RETURN(DecisionFunction function, ParseDecisionFunction(name));
  return static_cast<v1::DecisionFunction>(function);
}

}  // namespace cops
