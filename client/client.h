#ifndef COPS_CLIENT_CLIENT_H_
#define COPS_CLIENT_CLIENT_H_

// A small synchronous client of the CopyDetection service (proto/cops.proto), used by the
// `cops` command line and the load generator. Every call carries the API key (if any) and a
// deadline of ClientOptions::timeout; errors come back as absl::Status with the server's
// canonical code and message (UNAVAILABLE when the server cannot be reached).
//
// Thread-safety: a Client may be used from many threads at once (gRPC stubs are).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client_security.h"
#include "grpcpp/channel.h"
#include "proto/cops.grpc.pb.h"

namespace cops {

struct ClientOptions {
  std::string target = "127.0.0.1:7411";  // HOST:PORT of copsd
  ClientSecurityOptions security;
  std::chrono::milliseconds timeout{60000};  // deadline of each call
  int max_message_bytes = 64 << 20;          // largest message sent or received
  // Longest wait between reconnection attempts after the server went away; 0 = gRPC's
  // default (up to 120 s). Calls made while the channel waits fail at once with UNAVAILABLE,
  // so long-lived callers (cops-milter) keep it short to resume soon after a restart.
  int max_reconnect_backoff_ms = 0;
  // A TCP connection of its own; otherwise Clients of one target in a process share one
  // (gRPC's global subchannel pool), with the server's limit of streams per connection.
  bool own_connection = false;
};

class Client {
 public:
  // Does not contact the server (the first call does). INVALID_ARGUMENT / NOT_FOUND for bad
  // TLS settings (client/client_security.h).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  // A client over an existing channel, e.g. copsd's in-process channel to its own service
  // (the HTTP API, http/api.h); options.target and the channel settings are unused.
  static std::unique_ptr<Client> OverChannel(std::shared_ptr<grpc::Channel> channel,
                                             const ClientOptions& options);

  // `receipt` false sets omit_receipt: the reply carries no receipt.
  absl::StatusOr<v1::RegisterDocumentReply> Register(const v1::Document& document,
                                                     bool receipt = true);
  // One client-streaming call for all documents; per-document errors are in the reply.
  absl::StatusOr<v1::RegisterDocumentsReply> RegisterMany(
      const std::vector<v1::Document>& documents, bool receipts = true);
  // The reply's log_sequence: through a cluster, the unregistration's log event, to pass as a
  // check's min_log_sequence; 0 on a node without the log.
  absl::StatusOr<v1::UnregisterDocumentReply> Unregister(uint64_t doc_id);
  absl::StatusOr<v1::DocumentInfo> Get(uint64_t doc_id, bool include_content = false);
  absl::StatusOr<v1::ListDocumentsReply> List(uint32_t page_size, const std::string& page_token,
                                              const std::string& collection = "");
  absl::StatusOr<v1::CheckDocumentReply> Check(const v1::CheckDocumentRequest& request);
  absl::StatusOr<v1::GetStatsReply> Stats();
  // Checks that reported the caller's documents (or, for an admin, those of request.owner).
  absl::StatusOr<v1::ListMatchesReply> ListMatches(const v1::ListMatchesRequest& request);
  // The standard gRPC health check (grpc.health.v1.Health/Check, which copsd serves): OK when
  // the server reports SERVING; UNAVAILABLE naming the reported status otherwise, or the
  // call's error. No API key is needed.
  absl::Status Health();

  // For callers that need the raw stub (e.g. CheckStream); Prepare() sets key and deadline.
  v1::CopyDetection::Stub* stub() { return stub_.get(); }
  void Prepare(grpc::ClientContext* context) const;
  std::chrono::milliseconds timeout() const { return options_.timeout; }

 private:
  Client(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
      : options_(std::move(options)),
        channel_(std::move(channel)),
        stub_(v1::CopyDetection::NewStub(channel_)) {}

  const ClientOptions options_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::CopyDetection::Stub> stub_;
};

// The absl::Status of a gRPC status: the codes are the same numbers.
absl::Status FromGrpc(const grpc::Status& status);
// One document's result of a bulk registration: its reply, or its error as a status.
absl::StatusOr<v1::RegisterDocumentReply> ResultOf(const v1::RegisterResult& result);

// A name or alias of the format table (convert/document_format.h: "auto", "text", "pdf",
// ..., any case); INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::DocumentFormat> ParseFormatName(const std::string& name);
// "match_ratio" (or "ratio"), "containment", "match_count" (or "count"), "ordered_matches"
// (or "ordered"); INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::DecisionFunction> ParseFunctionName(const std::string& name);

}  // namespace cops

#endif  // COPS_CLIENT_CLIENT_H_
