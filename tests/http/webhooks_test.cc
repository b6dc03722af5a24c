// The webhook rules that need no network: which addresses are special (never called unless
// named), how callback URLs and allow-list entries are checked, and the signature format;
// that a registration (URL and secret) kept in the access store survives a restart; and that
// a receiver answering without end is cut off.

#include "http/webhooks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "storage/principal_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

TEST(SpecialAddressKindTest, InternalRangesAreNamedAndPublicOnesAreNot) {
  EXPECT_EQ(SpecialAddressKind("127.0.0.1"), "loopback");
  EXPECT_EQ(SpecialAddressKind("127.255.0.9"), "loopback");
  EXPECT_EQ(SpecialAddressKind("169.254.169.254"), "link-local");  // cloud metadata
  EXPECT_EQ(SpecialAddressKind("10.1.2.3"), "private");
  EXPECT_EQ(SpecialAddressKind("172.16.0.1"), "private");
  EXPECT_EQ(SpecialAddressKind("172.31.255.255"), "private");
  EXPECT_EQ(SpecialAddressKind("192.168.1.1"), "private");
  EXPECT_EQ(SpecialAddressKind("100.64.0.1"), "shared (carrier-grade NAT)");
  EXPECT_EQ(SpecialAddressKind("0.0.0.0"), "this-network (0.0.0.0/8)");
  EXPECT_EQ(SpecialAddressKind("224.0.0.1"), "multicast");
  EXPECT_EQ(SpecialAddressKind("255.255.255.255"), "reserved");
  EXPECT_EQ(SpecialAddressKind("::1"), "loopback");
  EXPECT_EQ(SpecialAddressKind("::"), "this-network (::)");
  EXPECT_EQ(SpecialAddressKind("fe80::1"), "link-local");
  EXPECT_EQ(SpecialAddressKind("fd00::5"), "private (unique local)");
  // IPv4 inside IPv6 is judged by the IPv4 address.
  EXPECT_EQ(SpecialAddressKind("::ffff:127.0.0.1"), "loopback");
  EXPECT_EQ(SpecialAddressKind("::ffff:10.0.0.1"), "private");
  EXPECT_EQ(SpecialAddressKind("64:ff9b::a9fe:a9fe"), "link-local");
  EXPECT_EQ(SpecialAddressKind("2002:7f00:1::"), "loopback");
  // Public.
  EXPECT_EQ(SpecialAddressKind("8.8.8.8"), "");
  EXPECT_EQ(SpecialAddressKind("172.32.0.1"), "");
  EXPECT_EQ(SpecialAddressKind("2606:4700::1111"), "");
  EXPECT_EQ(SpecialAddressKind("::ffff:8.8.8.8"), "");
}

TEST(WebhookSignatureTest, IsHmacSha256OfTimestampDotBody) {
  // Reference: printf '1700000000.{"id":"job_1"}' | openssl dgst -sha256 -hmac whsec_test
  EXPECT_EQ(WebhookSignature("whsec_test", 1700000000, R"({"id":"job_1"})"),
            "t=1700000000,v1=270236e1194a25b49b6be7643976ceaadf24e8d2e0795d96cb5a46ae962050a7");
}

TEST(WebhookAllowListTest, MalformedEntriesAreRefused) {
  EXPECT_OK(Webhooks::CheckAllowList({"*", "hooks.example.org", "hooks.example.org:8443",
                                      "127.0.0.1:9000", "[::1]:9000", "::1"}));
  for (const char* bad : {"", "host:", "host:99999", "host:x", "*.example.org", "[::1",
                          "a b", "[::1]x"}) {
    absl::Status s = Webhooks::CheckAllowList({bad});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad << ": " << s;
  }
}

TEST(WebhookResolveTest, OnlyAllowedHostsAndAddressesAreCalled) {
  WebhookOptions options;
  options.workers = 1;
  options.allow = {"*", "127.0.0.1:9000"};
  Webhooks webhooks(options);
  ASSERT_OK_AND_ASSIGN(CallbackTarget target, webhooks.Resolve("http://127.0.0.1:9000/hook?x=1"));
  EXPECT_EQ(target.address, "127.0.0.1");
  EXPECT_EQ(target.port, 9000);
  EXPECT_EQ(target.path, "/hook?x=1");
  const struct {
    const char* url;
    const char* why;
  } kRefused[] = {
      {"http://127.0.0.1:9001/", "loopback"},  // the named address, another port
      {"http://169.254.169.254/latest/meta-data/", "link-local"},
      {"http://10.0.0.7/", "private"},
      {"http://[::1]:9000/", "loopback"},
      {"http://[::ffff:127.0.0.1]:9000/", "loopback"},
      {"http://localhost:9001/", "loopback"},  // a name is judged by its addresses
      {"http://0x7f000001:9001/", "loopback"},
      {"ftp://example.org/", "only http and https"},
      {"http://user@example.org/", "'@'"},
      {"/relative", "absolute"},
      {"http://exa mple.org/", "spaces"},
  };
  for (const auto& c : kRefused) {
    absl::StatusOr<CallbackTarget> t = webhooks.Resolve(c.url);
    ASSERT_FALSE(t.ok()) << c.url;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << c.url << ": " << t.status();
    EXPECT_NE(t.status().message().find(c.why), std::string::npos) << c.url << ": " << t.status();
  }
  WebhookOptions strict_options;
  strict_options.allow = {"hooks.example.org"};
  strict_options.workers = 1;
  Webhooks strict(strict_options);
  absl::StatusOr<CallbackTarget> t = strict.Resolve("http://other.example.org/");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not on the webhook allow-list"), std::string::npos)
      << t.status();
  Webhooks none(WebhookOptions{});
  EXPECT_FALSE(none.Resolve("http://127.0.0.1:9000/").ok());
}

// A restart (the store closed and opened again, new Webhooks) keeps each principal's URL and
// secret: a delivery after it is signed with the secret shown before it. A deletion is kept
// too.
TEST(WebhookStoreTest, ARestartKeepsTheWebhookAndItsSecret) {
  testing::TempDir dir("webhook_store");
  // The receiver: the signature header and body of what it is sent.
  absl::Mutex mu;
  std::string signature, body;
  httplib::Server receiver;
  receiver.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    signature = req.get_header_value("X-COPS-Signature");
    body = req.body;
    res.status = 204;
  });
  const int port = receiver.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { receiver.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
  WebhookOptions options;
  options.allow = {"127.0.0.1"};
  std::string secret;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                         PrincipalStore::Open((dir.path() / "access").string()));
    options.store = store.get();
    Webhooks before(options);
    ASSERT_OK(before.Load());
    ASSERT_OK_AND_ASSIGN(secret, before.Register("acm-press", url));
    ASSERT_OK(before.Register("ieee-press", "").status());
    ASSERT_OK(before.Unregister("ieee-press"));
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                       PrincipalStore::Open((dir.path() / "access").string()));
  options.store = store.get();
  Webhooks after(options);
  ASSERT_OK(after.Load());
  EXPECT_EQ(after.RegisteredUrl("acm-press"), url);
  EXPECT_EQ(after.RegisteredUrl("ieee-press"), std::nullopt);
  after.Deliver("job-1", "owner-tag", "acm-press", url, R"({"id":"job-1","state":"done"})");
  std::string sent, sent_body;
  for (int i = 0; i < 3000 && sent.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    absl::MutexLock lock(&mu);
    sent = signature;
    sent_body = body;
  }
  receiver.stop();
  serving.join();
  ASSERT_TRUE(sent.starts_with("t=")) << sent;
  const int64_t t = std::stoll(sent.substr(2, sent.find(',') - 2));
  EXPECT_EQ(sent, WebhookSignature(secret, t, sent_body));
}

// A receiver on a raw socket that answers every connection with `head`, then `more` over and
// over as fast as the connection takes it, until stopped.
class FloodingReceiver {
 public:
  FloodingReceiver(std::string head, std::string more)
      : head_(std::move(head)), more_(std::move(more)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    listen(fd_, 4);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FloodingReceiver() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  void Serve() {
    while (!stop_) {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char request[4096];
      [[maybe_unused]] const ssize_t n = recv(c, request, sizeof(request), 0);
      bool ok = send(c, head_.data(), head_.size(), MSG_NOSIGNAL) > 0;
      while (ok && !stop_) ok = send(c, more_.data(), more_.size(), MSG_NOSIGNAL) > 0;
      close(c);
    }
  }

  const std::string head_, more_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The attempts of the job's one delivery once it has ended (max_attempts 1), waiting at most
// `wait`.
std::vector<WebhookAttempt> AttemptsOf(const Webhooks& webhooks, const std::string& job,
                                       std::chrono::seconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < until) {
    absl::StatusOr<std::vector<WebhookDelivery>> d = webhooks.Deliveries(job, "owner-tag");
    if (d.ok() && !d->empty() && d->back().state != "pending") return d->back().attempts;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {};
}

// A receiver (any public host may be one, under --webhook-allow '*') answering without end:
// headers that never finish, or a body that never does. Each used to be read whole into
// memory, as fast as it came, and the attempt lasted as long as the receiver kept sending.
TEST(WebhookDeliveryTest, AReceiverAnsweringWithoutEndIsCutOffAndReadWithinBounds) {
  WebhookOptions options;
  options.allow = {"127.0.0.1"};
  options.max_attempts = 1;
  options.attempt_timeout = std::chrono::milliseconds(3000);
  Webhooks webhooks(options);  // stops after the receivers: an attempt in flight ends first
  const std::string endless_header = "X-Pad: " + std::string(4000, 'a') + "\r\n";
  FloodingReceiver headers("HTTP/1.1 200 OK\r\n", endless_header);
  FloodingReceiver body("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",
                        std::string(64 << 10, 'b'));
  ASSERT_OK(webhooks.Register("acm-press", "").status());
  const auto start = std::chrono::steady_clock::now();
  webhooks.Deliver("flood-headers", "owner-tag", "acm-press",
                   "http://127.0.0.1:" + std::to_string(headers.port()) + "/hook", "{}");
  webhooks.Deliver("flood-body", "owner-tag", "acm-press",
                   "http://127.0.0.1:" + std::to_string(body.port()) + "/hook", "{}");
  const std::vector<WebhookAttempt> h =
      AttemptsOf(webhooks, "flood-headers", std::chrono::seconds(20));
  const std::vector<WebhookAttempt> b =
      AttemptsOf(webhooks, "flood-body", std::chrono::seconds(20));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(h.size(), 1u) << "the attempt did not end";
  EXPECT_NE(h[0].error.find("headers over the limit"), std::string::npos) << h[0].error;
  // The status line came: the answer counts, but the body is not read past a bound.
  ASSERT_EQ(b.size(), 1u) << "the attempt did not end";
  EXPECT_EQ(b[0].http_status, 200);
  EXPECT_EQ(b[0].error, "");
  EXPECT_LT(took, std::chrono::seconds(10));
}

// Delivered jobs are kept (listed) within max_jobs and max_bytes, the least recently changed
// forgotten first. Before, only a count bounded them, each body as large as its job's result,
// and "the first ones" beyond it were the smallest job ids (random ones in copsd), not the
// oldest.
TEST(WebhookDeliveryTest, DeliveredJobsAreKeptWithinTheirCountAndBytesOldestForgottenFirst) {
  httplib::Server receiver;
  receiver.Post("/hook", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  const int port = receiver.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { receiver.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
  for (const bool by_bytes : {false, true}) {
    WebhookOptions options;
    options.allow = {"127.0.0.1"};
    options.max_attempts = 1;
    options.max_jobs = by_bytes ? 10000 : 5;
    options.max_bytes = by_bytes ? 1 << 20 : uint64_t{1} << 30;
    Webhooks webhooks(options);
    ASSERT_OK(webhooks.Register("acm-press", "").status());
    // job-1 .. job-12, each delivered before the next: job-10 sorts before job-2 by name.
    for (int i = 1; i <= 12; ++i) {
      const std::string job = "job-" + std::to_string(i);
      webhooks.Deliver(job, "owner-tag", "acm-press", url, std::string(200 << 10, 'x'));
      ASSERT_EQ(AttemptsOf(webhooks, job, std::chrono::seconds(20)).size(), 1u) << job;
    }
    // A further delivery makes room: by count 5 stay (4 and the new one), by bytes 5 bodies of
    // 200 KiB fit in 1 MiB.
    webhooks.Deliver("job-13", "owner-tag", "acm-press", url, "{}");
    for (int i = 1; i <= 12; ++i) {
      const bool kept = webhooks.Deliveries("job-" + std::to_string(i), "owner-tag").ok();
      EXPECT_EQ(kept, i > (by_bytes ? 7 : 8))
          << "job-" << i << (by_bytes ? " by bytes" : " by count");
    }
  }
  receiver.stop();
  serving.join();
}

}  // namespace
}  // namespace cops
