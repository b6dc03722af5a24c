// The harness's servers keep their port to themselves. With gRPC's default SO_REUSEPORT, a
// second socket of the same user binding a test server's port explicitly would be let in,
// and the kernel would hand it some of the connections meant for the test (how a test's
// calls can reach another test's server when ctest runs tests in parallel).

#include "tests/testing/test_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops.grpc.pb.h"
#include "tests/testing/status_matchers.h"

namespace cops::testing {
namespace {

// Whether a socket set up as gRPC sets up its listeners (SO_REUSEADDR and SO_REUSEPORT) can
// bind 127.0.0.1:`port` and listen there: what a server started on that port by another
// test of the same user would do.
bool AnotherListenerFits(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool fits = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
                    listen(fd, 1) == 0;
  close(fd);
  return fits;
}

// A server of its own (as tests that build their own grpc::ServerBuilder have) on
// 127.0.0.1:0, its listener added by `listen`; *port is the bound port.
std::unique_ptr<grpc::Server> StartOwnServer(
    const std::function<void(grpc::ServerBuilder*, int*)>& listen, grpc::Service* service,
    int* port) {
  grpc::ServerBuilder builder;
  listen(&builder, port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

TEST(TestServerTest, NoOtherListenerCanShareItsPort) {
  v1::CopyDetection::Service unimplemented;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TestServer> server, TestServer::Start({&unimplemented}));
  EXPECT_FALSE(AnotherListenerFits(server->port()));

  v1::CopyDetection::Service other;
  int port = 0;
  std::unique_ptr<grpc::Server> own = StartOwnServer(
      [](grpc::ServerBuilder* b, int* p) {
        AddTestListener(b, "127.0.0.1:0", grpc::InsecureServerCredentials(), p);
      },
      &other, &port);
  ASSERT_NE(own, nullptr);
  EXPECT_FALSE(AnotherListenerFits(port));
  own->Shutdown();
}

// Why: a server with gRPC's defaults lets the other listener in.
TEST(TestServerTest, WithGrpcDefaultsAnotherListenerSharesThePort) {
  v1::CopyDetection::Service unimplemented;
  int port = 0;
  std::unique_ptr<grpc::Server> server = StartOwnServer(
      [](grpc::ServerBuilder* b, int* p) {
        b->AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), p);
      },
      &unimplemented, &port);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(AnotherListenerFits(port));
  server->Shutdown();
}

}  // namespace
}  // namespace cops::testing
