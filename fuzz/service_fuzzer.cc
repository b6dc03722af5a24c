// libFuzzer entry for the gRPC CopyDetection service (server/service.h) over its request
// messages: the input's first byte picks the RPC (low 4 bits), the caller (bits 4-5) and, for
// the streaming RPCs, how many times the message is sent (bits 6-7); the rest is parsed with
// ParseFromArray into that RPC's request type, which is sent to the real service over an
// in-process channel (no socket), served over a fresh data directory in /tmp. Callers:
//   0: auth off (every caller is a local admin, copsd --auth off);
//   1: auth on, an owner principal granted collection "a";
//   2: auth on, a well-formed API key nobody was given;
//   3: auth on, no key at all.
// Every call must end with a status, never a crash, a hang (each call has a 10 s deadline)
// or UNKNOWN (an exception escaping a handler); every error carries a message. Conversion
// runs in process here (the converters have fuzz targets of their own). Only
// server/service.cc is compiled with coverage and sanitizers; the rest is the normal build.
// Seeds: fuzz/fuzz_seeds.cc ("service"), one real request per RPC and caller.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "access/open_authorizer.h"
#include "fuzz/service_parts.h"
#include "grpcpp/grpcpp.h"
#include "proto/cops.grpc.pb.h"
#include "server/service.h"

namespace {

using cops::v1::CopyDetection;

using cops::fuzzing::Require;

// The services and their in-process channels; built once, kept for the whole run.
struct Stack {
  Stack() : parts("service") {
    open_authorizer = std::make_unique<cops::OpenAuthorizer>(parts.access.get());
    open_service = parts.Service(open_authorizer.get());
    auth_service = parts.Service(parts.access.get());
    open_server = Serve(open_service.get());
    auth_server = Serve(auth_service.get());
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    open_stub = CopyDetection::NewStub(open_server->InProcessChannel(args));
    auth_stub = CopyDetection::NewStub(auth_server->InProcessChannel(args));
  }

  static std::unique_ptr<grpc::Server> Serve(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.RegisterService(service);
    builder.SetMaxReceiveMessageSize(64 << 20);
    auto server = builder.BuildAndStart();
    Require(server != nullptr);
    return server;
  }

  cops::fuzzing::ServiceParts parts;
  std::unique_ptr<cops::OpenAuthorizer> open_authorizer;
  std::unique_ptr<cops::CopyDetectionService> open_service;
  std::unique_ptr<cops::CopyDetectionService> auth_service;
  std::unique_ptr<grpc::Server> open_server;
  std::unique_ptr<grpc::Server> auth_server;
  std::unique_ptr<CopyDetection::Stub> open_stub;
  std::unique_ptr<CopyDetection::Stub> auth_stub;
};

Stack& TheStack() {
  // Never destroyed: libFuzzer exits without unwinding, and the servers' threads outlive
  // any static destructor order.
  static Stack* stack = new Stack();
  return *stack;
}

void Prepare(grpc::ClientContext* ctx, int caller) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (caller == 1) ctx->AddMetadata("authorization", "Bearer " + TheStack().parts.owner_key);
  if (caller == 2) {
    ctx->AddMetadata("authorization",
                     "Bearer cops_00000000000000ff_" + std::string(64, 'a'));
  }
}

void RequireAnswered(const grpc::Status& status) {
  Require(status.error_code() != grpc::StatusCode::UNKNOWN);
  Require(status.ok() || !status.error_message().empty());
}

template <typename Request>
bool Parse(std::string_view bytes, Request* request) {
  return request->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

template <typename Request, typename Reply, typename Call>
int Unary(std::string_view bytes, int caller, Call call) {
  Request request;
  if (!Parse(bytes, &request)) return -1;
  grpc::ClientContext ctx;
  Prepare(&ctx, caller);
  Reply reply;
  RequireAnswered(call(&ctx, request, &reply));
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Stack& stack = TheStack();
  const int rpc = data[0] & 15;
  const int caller = (data[0] >> 4) & 3;
  const int repeat = 1 + (data[0] >> 6);
  CopyDetection::Stub* stub = caller == 0 ? stack.open_stub.get() : stack.auth_stub.get();
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace cops::v1;  // NOLINT(google-build-using-namespace): the request types
  switch (rpc % 9) {
    case 0:
      return Unary<RegisterDocumentRequest, RegisterDocumentReply>(
          bytes, caller, [&](auto* c, auto& q, auto* r) { return stub->RegisterDocument(c, q, r); });
    case 1:
      return Unary<UnregisterDocumentRequest, UnregisterDocumentReply>(
          bytes, caller,
          [&](auto* c, auto& q, auto* r) { return stub->UnregisterDocument(c, q, r); });
    case 2:
      return Unary<GetDocumentRequest, GetDocumentReply>(
          bytes, caller, [&](auto* c, auto& q, auto* r) { return stub->GetDocument(c, q, r); });
    case 3:
      return Unary<ListDocumentsRequest, ListDocumentsReply>(
          bytes, caller, [&](auto* c, auto& q, auto* r) { return stub->ListDocuments(c, q, r); });
    case 4:
      return Unary<CheckDocumentRequest, CheckDocumentReply>(
          bytes, caller, [&](auto* c, auto& q, auto* r) { return stub->CheckDocument(c, q, r); });
    case 5:
      return Unary<GetStatsRequest, GetStatsReply>(
          bytes, caller, [&](auto* c, auto& q, auto* r) { return stub->GetStats(c, q, r); });
    case 6:
      return Unary<ListMatchesRequest, ListMatchesReply>(
          bytes, caller, [&](auto* c, auto& q, auto* r) { return stub->ListMatches(c, q, r); });
    case 7: {
      RegisterDocumentRequest request;
      if (!Parse(bytes, &request)) return -1;
      grpc::ClientContext ctx;
      Prepare(&ctx, caller);
      RegisterDocumentsReply reply;
      auto writer = stub->RegisterDocuments(&ctx, &reply);
      for (int i = 0; i < repeat && writer->Write(request); ++i) {
      }
      writer->WritesDone();
      RequireAnswered(writer->Finish());
      return 0;
    }
    default: {
      CheckDocumentRequest request;
      if (!Parse(bytes, &request)) return -1;
      grpc::ClientContext ctx;
      Prepare(&ctx, caller);
      auto stream = stub->CheckStream(&ctx);
      CheckDocumentReply reply;
      for (int i = 0; i < repeat && stream->Write(request); ++i) {
        if (!stream->Read(&reply)) break;
      }
      stream->WritesDone();
      while (stream->Read(&reply)) {
      }
      RequireAnswered(stream->Finish());
      return 0;
    }
  }
}
