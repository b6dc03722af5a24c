#include "tests/testing/test_server.h"

#include <string>
#include <utility>

#include "absl/status/status.h"

namespace cops::testing {

absl::StatusOr<std::unique_ptr<TestServer>> TestServer::Start(
    const std::vector<grpc::Service*>& services,
    std::shared_ptr<grpc::ServerCredentials> credentials) {
  grpc::ServerBuilder builder;
  int port = 0;
  AddTestListener(&builder, "127.0.0.1:0", std::move(credentials), &port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return absl::InternalError("gRPC could not start the test server");
  if (port <= 0) {
    server->Shutdown();
    return absl::InternalError("gRPC could not bind 127.0.0.1:0");
  }
  return std::unique_ptr<TestServer>(new TestServer(std::move(server), port));
}

TestServer::TestServer(std::unique_ptr<grpc::Server> server, int port)
    : server_(std::move(server)),
      port_(port),
      channel_(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials())) {}

TestServer::~TestServer() { Shutdown(); }

std::string TestServer::address() const { return "127.0.0.1:" + std::to_string(port_); }

void TestServer::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown();
  server_->Wait();
  server_.reset();
}

void AddTestListener(grpc::ServerBuilder* builder, const std::string& address,
                     std::shared_ptr<grpc::ServerCredentials> credentials, int* port) {
  builder->AddListeningPort(address, std::move(credentials), port);
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

void PrepareCall(grpc::ClientContext* ctx, const std::string& api_key,
                 std::chrono::seconds timeout) {
  if (!api_key.empty()) ctx->AddMetadata("authorization", "Bearer " + api_key);
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
}

namespace internal {

::testing::AssertionResult IsOk(const char* expr, const grpc::Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << expr << " is not OK: "
         << absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()))
         << ": " << status.error_message();
}

}  // namespace internal
}  // namespace cops::testing
