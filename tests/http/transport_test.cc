// The HTTP connection layer against abusive clients over real loopback sockets: a client
// dripping its request (slowloris) and clients holding idle connections are cut off, and a
// connection beyond the limit is refused at once instead of waiting forever.

#include "http/transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cops {
namespace {

using std::chrono::milliseconds;

class HttpTransportTest : public ::testing::Test {
 protected:
  void Start(const HttpTransportOptions& options) {
    server_ = std::make_unique<BoundedHttpServer>(options);
    server_->Get("/ping", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("pong", "text/plain");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    listener_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(milliseconds(1));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->stop();
    if (listener_.joinable()) listener_.join();
  }

  // A connected socket whose reads give up after `timeout` (so a hung server fails the test
  // instead of hanging it).
  int Connect(milliseconds timeout = milliseconds(10000)) const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  }
  // Everything the server sends until it closes (or the read time-out passes: then
  // `closed` is false).
  static std::string ReadAll(int fd, bool* closed) {
    std::string out;
    char buf[4096];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        continue;
      }
      *closed = n == 0 || errno == ECONNRESET;
      return out;
    }
  }

  std::unique_ptr<BoundedHttpServer> server_;
  int port_ = 0;
  std::thread listener_;
};

TEST_F(HttpTransportTest, ServesKeepAliveRequests) {
  Start({});
  httplib::Client client("127.0.0.1", port_);
  for (int i = 0; i < 3; ++i) {
    httplib::Result res = client.Get("/ping");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->body, "pong");
  }
}

TEST_F(HttpTransportTest, SlowlorisIsCutOffAtTheRequestDeadline) {
  HttpTransportOptions options;
  options.request_timeout = milliseconds(1000);
  Start(options);
  // Headers that never end, one byte every 100 ms: each byte comes well within any per-read
  // time-out, so only a deadline for the whole request stops it.
  const int fd = Connect();
  const std::string start = "GET /ping HTTP/1.1\r\nHost: x\r\n";
  ASSERT_EQ(send(fd, start.data(), start.size(), MSG_NOSIGNAL), static_cast<ssize_t>(start.size()));
  bool cut = false;
  int sent = 0;
  for (; sent < 300 && !cut; ++sent) {  // 30 s of dripping at most
    std::this_thread::sleep_for(milliseconds(100));
    const char byte = 'a';
    if (send(fd, &byte, 1, MSG_NOSIGNAL) != 1) cut = true;
    char probe;
    const ssize_t n = recv(fd, &probe, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) cut = true;
  }
  close(fd);
  EXPECT_TRUE(cut) << "the server still read the dripping request after " << sent << " bytes";
  // The server still serves others.
  httplib::Client client("127.0.0.1", port_);
  httplib::Result res = client.Get("/ping");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpTransportTest, ConnectionsBeyondTheLimitGet503AndIdleOnesAreClosed) {
  HttpTransportOptions options;
  options.threads = 2;
  options.max_queued_connections = 2;
  options.idle_timeout = milliseconds(1500);
  Start(options);
  // Four silent connections: two held by the workers, two queued.
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(Connect());
  // Let the accept loop take them all (a refusal of any of these would show below).
  std::this_thread::sleep_for(milliseconds(200));
  const int fifth = Connect();
  bool closed = false;
  const std::string refused = ReadAll(fifth, &closed);
  close(fifth);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("\"code\":\"UNAVAILABLE\""), std::string::npos) << refused;
  // The idle connections are closed by the server without a reply.
  for (int fd : idle) {
    bool idle_closed = false;
    EXPECT_EQ(ReadAll(fd, &idle_closed), "");
    EXPECT_TRUE(idle_closed);
    close(fd);
  }
  httplib::Client client("127.0.0.1", port_);
  httplib::Result res = client.Get("/ping");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

}  // namespace
}  // namespace cops
