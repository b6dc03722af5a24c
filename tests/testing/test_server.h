#ifndef COPS_TESTS_TESTING_TEST_SERVER_H_
#define COPS_TESTS_TESTING_TEST_SERVER_H_

// The real gRPC services of a test, served in process on an ephemeral 127.0.0.1 port, as
// copsd serves them; the test builds the services (over its TempDir) and keeps them alive
// for the server's lifetime.
//
//   ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get(), admin_.get()}));
//   auto stub = server_->NewStub<v1::CopyDetection>();
//   grpc::ClientContext ctx;
//   testing::PrepareCall(&ctx, api_key);
//   EXPECT_OK(stub->CheckDocument(&ctx, request, &reply));
//
// Thread-safety: a started TestServer may be used from any thread; Shutdown() and the
// destructor must not race with other calls on the object.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "tests/testing/status_matchers.h"

namespace cops::testing {

class TestServer {
 public:
  // Starts a server on 127.0.0.1:0 serving `services` (not owned; they must outlive the
  // server) with `credentials` (plaintext unless given, e.g. MakeServerCredentials for TLS).
  // Errors: INTERNAL if gRPC cannot build or bind the server.
  static absl::StatusOr<std::unique_ptr<TestServer>> Start(
      const std::vector<grpc::Service*>& services,
      std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials());

  // Shuts the server down (waits for calls in flight).
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  int port() const { return port_; }
  // "127.0.0.1:<port>".
  std::string address() const;

  // A plaintext channel to the server, made once (it does not reach a TLS listener).
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  // A channel into the server within this process, as copsd's HTTP API calls it.
  std::shared_ptr<grpc::Channel> InProcessChannel() const {
    grpc::ChannelArguments args;
    return server_->InProcessChannel(args);
  }

  // A stub of service `Service` (e.g. v1::Admin) over channel().
  template <typename Service>
  std::unique_ptr<typename Service::Stub> NewStub() const {
    return Service::NewStub(channel_);
  }

  // Stops serving after calls in flight complete; calling it again does nothing.
  void Shutdown();

 private:
  TestServer(std::unique_ptr<grpc::Server> server, int port);

  std::unique_ptr<grpc::Server> server_;
  int port_;
  std::shared_ptr<grpc::Channel> channel_;
};

// Adds a listener on `address` (e.g. "127.0.0.1:0") to `builder` as every test server must:
// without SO_REUSEPORT. gRPC turns it on by default, and then any later socket of the same
// user that binds the port explicitly (a test restarting its server on the same port, a copsd
// spawned on a port found free a moment before) joins the listener silently: the kernel
// splits new connections between two unrelated servers, and a test's calls reach another
// test's server. `*port` is set when the server starts.
void AddTestListener(grpc::ServerBuilder* builder, const std::string& address,
                     std::shared_ptr<grpc::ServerCredentials> credentials, int* port);

// Prepares a client call as the cops client does: "authorization: Bearer <api_key>"
// metadata unless `api_key` is empty, and a deadline `timeout` from now.
void PrepareCall(grpc::ClientContext* ctx, const std::string& api_key,
                 std::chrono::seconds timeout = std::chrono::seconds(10));

namespace internal {
// Lets ASSERT_OK/EXPECT_OK take a grpc::Status (failure prints its code and message).
::testing::AssertionResult IsOk(const char* expr, const grpc::Status& status);
}  // namespace internal

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_TEST_SERVER_H_
