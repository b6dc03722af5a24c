// The HTTP connection layer against abusive clients over real loopback sockets: a client
// dripping its request (slowloris) and clients holding idle connections are cut off, and a
// connection beyond the limit is refused at once instead of waiting forever. Over TLS (a
// throw-away PKI made with the openssl command): HTTPS with the CA, plain HTTP to the HTTPS
// port told to use https, mutual TLS refusing a client without a certificate of its CA and
// showing the names of one with, and a client that never finishes its handshake cut off.

#include "http/transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/test_certificates.h"
#include "tests/testing/temp_dir.h"

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
    server_->Get("/whoami", [](const httplib::Request&, httplib::Response& res) {
      std::string names;
      for (const std::string& name : BoundedHttpServer::PeerCertificateNames()) {
        names += name + ";";
      }
      res.set_content(names, "text/plain");
    });
    ASSERT_TRUE(server_->LoadTls().ok());
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

TEST_F(HttpTransportTest, HeadersBeyondTheLimitGet431AndAreNotKept) {
  // cpp-httplib 0.11 bounds each header line (8 KiB), not their number: a client sending
  // header lines as fast as loopback carries them grew copsd by ~60 MB a second until the
  // request's deadline.
  HttpTransportOptions options;
  options.request_timeout = milliseconds(5000);
  Start(options);
  const int fd = Connect();
  std::string request = "GET /ping HTTP/1.1\r\nHost: x\r\n";
  while (request.size() < 200 * 1024) request += "X-Pad: " + std::string(1000, 'a') + "\r\n";
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  bool closed = false;
  const std::string reply = ReadAll(fd, &closed);
  close(fd);
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 431 ")) << reply.substr(0, 200);
  EXPECT_NE(reply.find("request headers over the limit of 65536 bytes"), std::string::npos)
      << reply;
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, options.request_timeout)
      << "refused only at the request's deadline";
  // Headers within the limit are served, on this server and connection alike.
  httplib::Client client("127.0.0.1", port_);
  httplib::Result res = client.Get("/ping", {{"X-Pad", std::string(8000, 'a')}});
  ASSERT_TRUE(res) << httplib::to_string(res.error());
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

class HttpsTransportTest : public HttpTransportTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.Create(dir_.path())) << "openssl could not make the test PKI";
    ASSERT_TRUE(pki_.MakeClient("editor", "editor-01"));
    ASSERT_TRUE(pki_.MakeClient("stranger", "editor-01", "other-ca"));
  }
  HttpTransportOptions TlsOptions(bool mutual) const {
    HttpTransportOptions options;
    options.tls.cert_path = pki_.Path("server.pem");
    options.tls.key_path = pki_.Path("server.key");
    if (mutual) options.tls.client_ca_path = pki_.Path("ca.pem");
    return options;
  }
  // GET `path` over HTTPS trusting the test CA, presenting client certificate `client`
  // ("" for none).
  httplib::Result Get(const std::string& path, const std::string& client = "") const {
    std::unique_ptr<httplib::SSLClient> https =
        client.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", port_)
                       : std::make_unique<httplib::SSLClient>("127.0.0.1", port_,
                                                              pki_.Path(client + ".pem"),
                                                              pki_.Path(client + ".key"));
    https->set_ca_cert_path(pki_.Path("ca.pem").c_str());
    https->enable_server_certificate_verification(true);
    https->set_read_timeout(10, 0);
    return https->Get(path.c_str());
  }

  testing::TempDir dir_{"http_tls"};
  testing::TestPki pki_;
};

TEST_F(HttpsTransportTest, ServesHttpsWithItsCaAndTellsPlainHttpToUseHttps) {
  Start(TlsOptions(/*mutual=*/false));
  httplib::Result res = Get("/ping");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "pong");
  // Without mutual TLS the handlers see no certificate names.
  res = Get("/whoami");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "");
  // Plain HTTP to the HTTPS port: refused with a reply saying what to do, never served.
  httplib::Client plain("127.0.0.1", port_);
  plain.set_read_timeout(10, 0);
  httplib::Result refused = plain.Get("/ping");
  ASSERT_TRUE(refused) << httplib::to_string(refused.error());
  EXPECT_EQ(refused->status, 400);
  EXPECT_NE(refused->body.find("use https://"), std::string::npos) << refused->body;
}

TEST_F(HttpsTransportTest, MutualTlsRefusesClientsWithoutACertificateOfItsCa) {
  Start(TlsOptions(/*mutual=*/true));
  // No certificate, or one of another CA (with the same name): no connection at all.
  EXPECT_FALSE(Get("/ping"));
  EXPECT_FALSE(Get("/ping", "stranger"));
  // The CA's client: served, and its certificate's name reaches the handler.
  httplib::Result res = Get("/whoami", "editor");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "editor-01;");
}

TEST_F(HttpsTransportTest, HeadersBeyondTheLimitGet431OverTlsToo) {
  Start(TlsOptions(/*mutual=*/false));
  httplib::SSLClient https("127.0.0.1", port_);
  https.set_ca_cert_path(pki_.Path("ca.pem").c_str());
  https.enable_server_certificate_verification(true);
  https.set_read_timeout(10, 0);
  httplib::Headers headers;
  for (int i = 0; i < 100; ++i)
    headers.emplace("X-Pad-" + std::to_string(i), std::string(1000, 'a'));
  httplib::Result res = https.Get("/ping", headers);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 431);
  EXPECT_NE(res->body.find("over the limit"), std::string::npos) << res->body;
  res = Get("/ping");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "pong");
}

TEST_F(HttpsTransportTest, AClientThatNeverFinishesItsHandshakeIsCutOff) {
  HttpTransportOptions options = TlsOptions(/*mutual=*/false);
  options.threads = 1;
  options.request_timeout = milliseconds(500);
  options.idle_timeout = milliseconds(60000);
  Start(options);
  // Half a ClientHello's record header, then nothing: the worker must not wait for more.
  const int fd = Connect();
  ASSERT_EQ(send(fd, "\\x16\\x03\\x01", 3, MSG_NOSIGNAL), 3);
  bool closed = false;
  ReadAll(fd, &closed);
  close(fd);
  EXPECT_TRUE(closed);
  // The single worker is free again.
  httplib::Result res = Get("/ping");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "pong");
}

}  // namespace
}  // namespace cops
